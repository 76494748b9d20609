# PyTorch Lightning on a hard, noisy 4-class problem (weak signal, 25% label noise).
# CSVLogger -> lightning_logs/version_0/metrics.csv (train loss every 10 steps, val per epoch).
import sys, os
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import TensorDataset, DataLoader

torch.set_num_threads(1)
L.seed_everything(3)
out = sys.argv[1]

D, C = 24, 4
g = torch.Generator().manual_seed(3)
W = torch.randn(D, C, generator=g) * 0.18
def make(n):
    x = torch.randn(n, D, generator=g)
    logits = x @ W + 0.3 * torch.tanh(x[:, :C] * x[:, C:2 * C])
    y = torch.distributions.Categorical(logits=logits * 1.5).sample()
    noisy = torch.rand(n, generator=g) < 0.25
    y[noisy] = torch.randint(0, C, (int(noisy.sum()),), generator=g)
    return x, y
xtr, ytr = make(12000); xva, yva = make(3000)

class LitClassifier(L.LightningModule):
    def __init__(self, lr=5e-5, hidden=64):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(D, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, C))
    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss
    def validation_step(self, batch, _):
        x, y = batch
        out = self.net(x)
        self.log("val_loss", F.cross_entropy(out, y), prog_bar=True)
        self.log("val_acc", (out.argmax(1) == y).float().mean(), prog_bar=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

trainer = L.Trainer(max_epochs=15, accelerator="cpu", devices=1, log_every_n_steps=10,
                    logger=CSVLogger(out, name="lightning_logs"), enable_progress_bar=False,
                    default_root_dir=out)
trainer.fit(LitClassifier(),
            DataLoader(TensorDataset(xtr, ytr), batch_size=128, shuffle=True),
            DataLoader(TensorDataset(xva, yva), batch_size=1000))
