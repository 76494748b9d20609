# Lightning classifier on synthetic Gaussian blobs; AdamW + cosine annealing (per step).
# CSVLogger + LearningRateMonitor + ModelCheckpoint.
import os, sys, math, torch
torch.set_num_threads(1)
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
L.seed_everything(0, workers=True)
g = torch.Generator().manual_seed(0)
C, D = 5, 16
centers = 0.6 * torch.randn(C, D, generator=g)
def make(n):
    y = torch.randint(0, C, (n,), generator=g); x = centers[y] + torch.randn(n, D, generator=g)
    return torch.utils.data.TensorDataset(x, y)
class Net(L.LightningModule):
    def __init__(self, lr=3e-3, weight_decay=1e-2, scheduler="cosine", max_epochs=8, hidden=128):
        super().__init__(); self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                                       torch.nn.ReLU(), torch.nn.Linear(hidden, C))
    def training_step(self, b, i):
        x, y = b; loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        x, y = b; lo = self.net(x)
        self.log("val_loss", torch.nn.functional.cross_entropy(lo, y))
        self.log("val_acc", (lo.argmax(-1) == y).float().mean())
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.estimated_stepping_batches)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
tr = torch.utils.data.DataLoader(make(3000), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(1))
va = torch.utils.data.DataLoader(make(1000), batch_size=500)
trainer = L.Trainer(max_epochs=8, accelerator="cpu", devices=1, logger=CSVLogger(out, name="lightning_logs"),
                    callbacks=[LearningRateMonitor(logging_interval="step"),
                               ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True)],
                    log_every_n_steps=5, enable_progress_bar=False, deterministic=True)
trainer.fit(Net(), tr, va)
print(trainer.callback_metrics)
