"""Lightning MLP on tabular data (5 classes), CSVLogger + ModelCheckpoint, accuracy computed by
hand.  Variants:
  healthy         - as designed
  permuted_train  - BUG: training labels randomly permuted (validation labels intact)
usage: python lightning_mlp.py OUT_RUNS_DIR VARIANT RUN_NAME
"""
import sys
import common
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint
from sklearn.preprocessing import StandardScaler

variant, name = sys.argv[2], sys.argv[3]
out = common.run_dir(name)
L.seed_everything(2024, workers=True)
torch.set_num_threads(1)


class TabularClassifier(L.LightningModule):
    def __init__(self, in_features=20, hidden=128, num_classes=5, lr=1e-3, weight_decay=1e-4):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, num_classes))
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.net(x)

    def _step(self, batch, stage):
        x, y = batch
        logits = self(x)
        loss = self.loss_fn(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        self.log(f"{stage}_loss", loss, on_step=(stage == "train"), on_epoch=True, prog_bar=True)
        self.log(f"{stage}_acc", acc, on_step=False, on_epoch=True, prog_bar=True)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr,
                                weight_decay=self.hparams.weight_decay)


C = 5
xtr, xva, ytr, yva = common.tabular(n=5000, n_features=20, n_informative=10, n_classes=C,
                                    seed=31, class_sep=1.1)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")
if variant == "permuted_train":
    ytr = np.random.default_rng(1).permutation(ytr)

train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva), torch.from_numpy(yva)), batch_size=256)

model = TabularClassifier(in_features=20, num_classes=C)
trainer = L.Trainer(max_epochs=20, default_root_dir=out, logger=CSVLogger(out),
                    callbacks=[ModelCheckpoint(monitor="val_loss", mode="min", save_top_k=1,
                                               filename="epoch{epoch:02d}-val_loss{val_loss:.3f}",
                                               auto_insert_metric_name=False)],
                    log_every_n_steps=20, enable_progress_bar=False, accelerator="cpu", devices=1,
                    deterministic=True)
trainer.fit(model, train_dl, val_dl)
