"""Lightning CNN on procedurally drawn shapes (circle/square/triangle/cross).

Healthy run with a resume: session 1 trains 6 epochs (lightning_logs/version_0),
session 2 restarts from last.ckpt and continues to epoch 15 (lightning_logs/version_1).
LR schedule: cosine with warm restarts whose period is given by `restart_period_epochs`.
Metrics logged once per epoch.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.set_num_threads(1)


def draw_shapes(n, seed, size=28):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    X = np.zeros((n, 1, size, size), np.float32)
    y = rng.integers(0, 4, n)
    for i in range(n):
        cx, cy = rng.uniform(9, 19, 2)
        r = rng.uniform(4, 8)
        if y[i] == 0:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 <= r ** 2
        elif y[i] == 1:
            m = (abs(xx - cx) <= r * 0.8) & (abs(yy - cy) <= r * 0.8)
        elif y[i] == 2:
            m = (yy - cy <= r * 0.7) & (yy - cy >= -r) & (abs(xx - cx) <= (yy - cy + r) * 0.55)
        else:
            m = ((abs(xx - cx) <= 1.5) & (abs(yy - cy) <= r)) | ((abs(yy - cy) <= 1.5) & (abs(xx - cx) <= r))
        img = m.astype(np.float32) * rng.uniform(0.5, 1.0) + rng.normal(0, 0.25, (size, size))
        X[i, 0] = img
    return torch.tensor(X), torch.tensor(y)


class ShapesCNN(L.LightningModule):
    def __init__(self, lr=1.5e-3, weight_decay=5e-4, restart_period_epochs=5, restart_mult=1, min_lr=1e-5, channels=16):
        super().__init__()
        self.save_hyperparameters()
        c = channels
        self.net = nn.Sequential(
            nn.Conv2d(1, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(2 * c, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
            opt, T_0=self.hparams.restart_period_epochs, T_mult=self.hparams.restart_mult, eta_min=self.hparams.min_lr)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


Xtr, ytr = draw_shapes(2400, 0)
Xva, yva = draw_shapes(600, 1)
train_dl = DataLoader(TensorDataset(Xtr, ytr), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(Xva, yva), batch_size=200)


def make_trainer(max_epochs):
    logger = CSVLogger(save_dir=out, name="lightning_logs")
    ckpt = ModelCheckpoint(monitor="val_loss", mode="min", save_top_k=2, save_last=True, save_on_train_epoch_end=True,
                           filename="epoch{epoch:02d}-val_loss{val_loss:.4f}", auto_insert_metric_name=False)
    return L.Trainer(max_epochs=max_epochs, accelerator="cpu", devices=1, logger=logger,
                     callbacks=[ckpt, LearningRateMonitor(logging_interval="epoch")],
                     enable_progress_bar=False, log_every_n_steps=10, deterministic=True), ckpt


L.seed_everything(0)
# session 1 (the job was scheduled for a 6-epoch slot)
model = ShapesCNN()
trainer, ckpt = make_trainer(6)
trainer.fit(model, train_dl, val_dl)
last = ckpt.last_model_path
print("session 1 done, last checkpoint:", last)

# session 2: resume from last.ckpt and continue to 15 epochs
L.seed_everything(1)
model = ShapesCNN()
trainer, ckpt = make_trainer(15)
trainer.fit(model, train_dl, val_dl, ckpt_path=last)
print("best:", ckpt.best_model_path, float(ckpt.best_model_score))
