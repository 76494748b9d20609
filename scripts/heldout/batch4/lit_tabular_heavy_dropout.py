"""Lightning MLP on a 6-class tabular problem with strong regularisation that is active only in
training: input Gaussian-noise augmentation (sigma=0.6) + dropout 0.5 after every hidden layer.
CSVLogger (metric names with '/'), per-step train loss every 25 steps plus per-epoch aggregates.
HEALTHY: val loss below train loss (and val acc above train acc) throughout - the train metrics are
measured on noised inputs with dropout on, the val metrics on clean inputs in eval mode.
usage: python lit_tabular_heavy_dropout.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(314, workers=True)


class RegularisedMLP(L.LightningModule):
    def __init__(self, d_in=30, hidden=256, n_classes=6, p_drop=0.5, input_noise=0.6, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(p_drop),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p_drop),
                                 nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x = x + self.hparams.input_noise * torch.randn_like(x)       # augmentation
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train/loss", loss, on_step=True, on_epoch=True)
        self.log("train/acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val/loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val/acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


xtr, xva, ytr, yva = common.tabular(n=6000, n_features=30, n_informative=14, n_classes=6, seed=8,
                                    class_sep=1.2, flip_y=0.02)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva), torch.from_numpy(yva)), batch_size=500)

trainer = L.Trainer(max_epochs=25, logger=CSVLogger(out, name="mlp_reg"),
                    callbacks=[ModelCheckpoint(monitor="val/acc", mode="max", save_top_k=1, save_last=True,
                                               filename="best-{epoch:02d}")],
                    log_every_n_steps=25, enable_progress_bar=False, accelerator="cpu", devices=1,
                    deterministic=True)
trainer.fit(RegularisedMLP(), train_dl, val_dl)
