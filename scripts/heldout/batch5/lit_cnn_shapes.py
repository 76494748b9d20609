"""Lightning: small BN-CNN on synthetic 24x24 shape images (4 classes: square/disc/cross/ring).
CSVLogger -> lightning_logs/version_0/metrics.csv (train loss/acc every 5 steps, lr every step via
LearningRateMonitor, val per epoch) + hparams.yaml; ModelCheckpoint keeps best-2 by val_loss + last.ckpt.
SGD+momentum with a per-step cosine schedule."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import math
import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint, LearningRateMonitor

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(0)
LR = float(os.environ.get("LR", 3.0))
x, y = common.shape_images(3000, size=24, seed=0)
x, y = common.to_tensor_images(x), torch.tensor(y)
train_dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:2400], y[:2400]), batch_size=64, shuffle=True)
val_dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[2400:], y[2400:]), batch_size=300)


def blk(i, o):
    return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]


class ShapeNet(L.LightningModule):
    def __init__(self, lr, momentum=0.9, weight_decay=5e-4, total_steps=900):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(*blk(3, 16), nn.MaxPool2d(2), *blk(16, 32), nn.MaxPool2d(2), *blk(32, 64),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, i):
        xb, yb = batch
        logits = self(xb)
        loss = nn.functional.cross_entropy(logits, yb)
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc", (logits.argmax(1) == yb).float().mean())
        return loss

    def validation_step(self, batch, i):
        xb, yb = batch
        logits = self(xb)
        self.log("val_loss", nn.functional.cross_entropy(logits, yb), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == yb).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=self.hparams.momentum,
                              weight_decay=self.hparams.weight_decay)
        T = self.hparams.total_steps
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, T) / T)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


EPOCHS = 24
model = ShapeNet(lr=LR, total_steps=EPOCHS * len(train_dl))
trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=1, default_root_dir=out, log_every_n_steps=5,
                    logger=CSVLogger(out, name="lightning_logs"),
                    callbacks=[ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True,
                                               filename="{epoch:02d}-{val_loss:.4f}"),
                               LearningRateMonitor(logging_interval="step")],
                    enable_progress_bar=False)
trainer.fit(model, train_dl, val_dl)
import pandas as pd
df = pd.read_csv(os.path.join(out, "lightning_logs", "version_0", "metrics.csv"))
tl = df.dropna(subset=["train_loss"])
print("train_loss per 50 steps:", [round(v, 2) for v in tl.groupby(tl.step // 50).train_loss.mean()])
print("train_loss max:", tl.train_loss.max(), "at", int(tl.step[tl.train_loss.idxmax()]))
v = df.dropna(subset=["val_loss"])
print(v[["epoch", "val_loss", "val_acc"]].round(3).to_string())
