"""Lightning small CNN on synthetic 16x16 bar-pattern images (6 classes), TensorBoardLogger +
ModelCheckpoint, accuracy computed by hand, SGD+momentum with a StepLR scheduler.
usage: python lightning_cnn_tb.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.callbacks import ModelCheckpoint, LearningRateMonitor

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(77, workers=True)
torch.set_num_threads(1)


class BarCNN(L.LightningModule):
    def __init__(self, num_classes=6, channels=16, lr=0.05, momentum=0.9, image_size=16):
        super().__init__()
        self.save_hyperparameters()
        c = channels
        self.features = nn.Sequential(
            nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(2 * c, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.log("train/loss", loss, on_step=True, on_epoch=True)
        self.log("train/acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val/loss", nn.functional.cross_entropy(logits, y), on_epoch=True)
        self.log("val/acc", (logits.argmax(1) == y).float().mean(), on_epoch=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=self.hparams.momentum)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.3)
        return {"optimizer": opt, "lr_scheduler": sched}


x, y = common.bar_images(3000, n_classes=6, size=16, noise=0.8, seed=77)
x = torch.from_numpy(x[:, None])
y = torch.from_numpy(y)
train_dl = DataLoader(TensorDataset(x[:2400], y[:2400]), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(x[2400:], y[2400:]), batch_size=256)

model = BarCNN(num_classes=6)
trainer = L.Trainer(max_epochs=15, default_root_dir=out,
                    logger=TensorBoardLogger(out, name="tb_logs"),
                    callbacks=[ModelCheckpoint(monitor="val/acc", mode="max", save_top_k=2, save_last=True),
                               LearningRateMonitor(logging_interval="epoch")],
                    log_every_n_steps=10, enable_progress_bar=False, accelerator="cpu", devices=1,
                    deterministic=True)
trainer.fit(model, train_dl, val_dl)
