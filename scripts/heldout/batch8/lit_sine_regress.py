# Lightning regression on a synthetic sum-of-sines target; Adam + cosine annealing (per step).
# CSVLogger + LearningRateMonitor + ModelCheckpoint.
import os, sys, torch
torch.set_num_threads(1)
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
L.seed_everything(0, workers=True)
g = torch.Generator().manual_seed(0)
D = 8; wv = torch.randn(D, 3, generator=g)
def make(n):
    x = torch.randn(n, D, generator=g); y = torch.sin(x @ wv).sum(1, keepdim=True) + 0.05 * torch.randn(n, 1, generator=g)
    return torch.utils.data.TensorDataset(x, y)
class Regressor(L.LightningModule):
    def __init__(self, lr=2e-3, scheduler="cosine", t_max_epochs=8, eta_min=0.0, hidden=128):
        super().__init__(); self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, hidden),
                                       torch.nn.Tanh(), torch.nn.Linear(hidden, 1))
    def training_step(self, b, i):
        x, y = b; loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))
    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        steps = self.hparams.t_max_epochs * len(self.trainer.datamodule.train_dataloader()) if self.trainer.datamodule else self.trainer.estimated_stepping_batches
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=self.hparams.eta_min)
        return opt
tr = torch.utils.data.DataLoader(make(3000), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(1))
va = torch.utils.data.DataLoader(make(1000), batch_size=500)
trainer = L.Trainer(max_epochs=8, accelerator="cpu", devices=1, logger=CSVLogger(out, name="lightning_logs"),
                    callbacks=[LearningRateMonitor(logging_interval="step"),
                               ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True)],
                    log_every_n_steps=5, enable_progress_bar=False, deterministic=True)
trainer.fit(Regressor(), tr, va)
print(trainer.callback_metrics)
