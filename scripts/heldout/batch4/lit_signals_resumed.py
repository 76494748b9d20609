"""Lightning 1-D CNN on synthetic waveform classification (5 classes), CSVLogger, checkpoint every
epoch (last.ckpt).  Run in two processes, as on a cluster with a wall-clock limit:
  phase 'first'  - the job is killed part-way through epoch 11 (simulated preemption: hard exit, so
                   the CSV rows not yet flushed are lost),
  phase 'resume' - a second process restarts with trainer.fit(ckpt_path=last.ckpt); Lightning opens
                   a new logger version (version_1) and continues from the last saved epoch.
HEALTHY.
usage: python lit_signals_resumed.py OUT_RUNS_DIR RUN_NAME first|resume
"""
import sys, os
import common
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint, Callback

name, phase = sys.argv[2], sys.argv[3]
out = common.run_dir(name, fresh=(phase == "first"))
L.seed_everything(2718 if phase == "first" else 2719, workers=True)


class SignalCNN(L.LightningModule):
    def __init__(self, lr=1e-3, width=24):
        super().__init__()
        self.save_hyperparameters()
        w = width
        self.net = nn.Sequential(nn.Conv1d(1, w, 7, padding=3), nn.BatchNorm1d(w), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(w, 2 * w, 5, padding=2), nn.BatchNorm1d(2 * w), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(2 * w, 2 * w, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(2 * w, 5))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, step_size=8, gamma=0.5)}


class SimulatedPreemption(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.current_epoch == 11 and batch_idx == 20:
            print("simulated SLURM time limit: killing the job", flush=True)
            os._exit(0)


xtr, ytr = common.waveforms(2400, noise=0.8, seed=10)
xva, yva = common.waveforms(600, noise=0.8, seed=11)
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)), batch_size=32, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva), torch.from_numpy(yva)), batch_size=200)

ckpt_dir = os.path.join(out, "checkpoints")
callbacks = [ModelCheckpoint(dirpath=ckpt_dir, monitor="val_loss", save_top_k=1, save_last=True,
                             filename="best-{epoch:02d}-{val_loss:.3f}")]
if phase == "first":
    callbacks.append(SimulatedPreemption())
trainer = L.Trainer(max_epochs=24, logger=CSVLogger(out, name="signals"), callbacks=callbacks,
                    log_every_n_steps=15, enable_progress_bar=False, accelerator="cpu", devices=1)
model = SignalCNN()
if phase == "first":
    trainer.fit(model, train_dl, val_dl)
else:
    trainer.fit(model, train_dl, val_dl, ckpt_path=os.path.join(ckpt_dir, "last.ckpt"))
