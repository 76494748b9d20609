"""Lightning small CNN on sklearn digits (8x8), TensorBoardLogger, eval once per epoch.
Validation loss is aggregated by hand in on_validation_epoch_end (the author wanted one number per
epoch and collects the per-batch losses in a list).
BUG: the epoch validation loss is the SUM of the per-batch mean losses (never divided by the
number of batches: 450 images / batch 64 -> 8 batches), while train loss is a per-sample mean.
usage: python lit_digits_tb.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.callbacks import ModelCheckpoint

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(11, workers=True)


class DigitsCNN(L.LightningModule):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 16, 64), nn.ReLU(),
                                 nn.Linear(64, 10))
        self.val_losses, self.val_correct, self.val_count = [], 0, 0

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("loss/train", loss, on_step=True, on_epoch=False)
        self.log("acc/train", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.val_losses.append(F.cross_entropy(logits, y))
        self.val_correct += (logits.argmax(1) == y).sum().item()
        self.val_count += len(y)

    def on_validation_epoch_end(self):
        self.log("loss/val", torch.stack(self.val_losses).sum())
        self.log("acc/val", self.val_correct / self.val_count)
        self.val_losses, self.val_correct, self.val_count = [], 0, 0

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


xtr, xva, ytr, yva = common.digits_split(seed=4, test_size=450)
xtr, xva = xtr[:, None] / 16.0, xva[:, None] / 16.0
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr).float(), torch.from_numpy(ytr)), batch_size=32, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva).float(), torch.from_numpy(yva)), batch_size=64)

trainer = L.Trainer(max_epochs=15, logger=TensorBoardLogger(out, name="tb", default_hp_metric=False),
                    callbacks=[ModelCheckpoint(monitor="loss/val", save_top_k=1, filename="digits-{epoch:02d}")],
                    log_every_n_steps=5, enable_progress_bar=False, accelerator="cpu", devices=1,
                    deterministic=True)
trainer.fit(DigitsCNN(), train_dl, val_dl)
