"""Lightning CNN on synthetic 16x16 'bar' images (4 orientations), TensorBoardLogger + ModelCheckpoint.
The validation images come from a second capture rig with more sensor noise than the training
images (a deliberately harder, shifted distribution).
HEALTHY: val loss sits ~2-3x above train after the first epoch; both still improve.
usage: python lit_bars_shifted_val.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.callbacks import ModelCheckpoint, LearningRateMonitor

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(99, workers=True)


class BarNet(L.LightningModule):
    def __init__(self, lr=2e-3, channels=16):
        super().__init__()
        self.save_hyperparameters()
        c = channels
        self.net = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(2 * c * 16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=1e-2)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)
        return {"optimizer": opt, "lr_scheduler": sched}


xtr, ytr = common.bar_images(6000, n_classes=4, noise=1.2, seed=1, jitter=2)
xva, yva = common.bar_images(800, n_classes=4, noise=1.45, seed=2, jitter=2)   # rig B: noisier sensor
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr[:, None]), torch.from_numpy(ytr)),
                      batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva[:, None]), torch.from_numpy(yva)), batch_size=200)

trainer = L.Trainer(max_epochs=8, logger=TensorBoardLogger(out, name="bars_cnn"),
                    callbacks=[ModelCheckpoint(monitor="val_loss", save_top_k=1, save_last=True),
                               LearningRateMonitor("epoch")],
                    log_every_n_steps=10, enable_progress_bar=False, accelerator="cpu", devices=1,
                    deterministic=True)
trainer.fit(BarNet(), train_dl, val_dl)
