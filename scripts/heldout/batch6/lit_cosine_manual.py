# Lightning manual optimisation (GAN-style training_step kept simple: one optimizer + gradient clipping by hand),
# AdamW + CosineAnnealingLR returned from configure_optimizers; CSVLogger + LearningRateMonitor + ModelCheckpoint.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(1)
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint, LearningRateMonitor
from torch.utils.data import TensorDataset, DataLoader
RUNS, NAME = sys.argv[1], sys.argv[2]
root = os.path.join(RUNS, NAME)
L.seed_everything(0)
D, C = 20, 5
W = torch.randn(D, C)
def data(n, seed):
    g = torch.Generator().manual_seed(seed); x = torch.randn(n, D, generator=g)
    y = (x @ W + 0.8 * torch.randn(n, C, generator=g)).argmax(1)
    return TensorDataset(x, y)
class Net(L.LightningModule):
    def __init__(self, lr=3e-3, epochs=15):
        super().__init__(); self.save_hyperparameters(); self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(D, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, C))
    def training_step(self, b, i):
        opt = self.optimizers()
        x, y = b; loss = F.cross_entropy(self.net(x), y)
        opt.zero_grad(); self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt.step()
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
    def validation_step(self, b, i):
        x, y = b; o = self.net(x)
        self.log("val_loss", F.cross_entropy(o, y)); self.log("val_acc", (o.argmax(1) == y).float().mean())
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)
        sch = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.hparams.epochs, eta_min=1e-5)
        return [opt], [{"scheduler": sch, "interval": "epoch"}]
m = Net()
trn = L.Trainer(max_epochs=15, default_root_dir=root, logger=CSVLogger(root, name="logs"), accelerator="cpu", devices=1,
                callbacks=[ModelCheckpoint(monitor="val_loss", save_last=True), LearningRateMonitor("epoch")],
                enable_progress_bar=False, log_every_n_steps=10)
trn.fit(m, DataLoader(data(3000, 1), batch_size=64, shuffle=True), DataLoader(data(600, 2), batch_size=256))
import csv
rows = list(csv.DictReader(open(f"{root}/logs/version_0/metrics.csv")))
lrk = [k for k in rows[0] if k.startswith("lr")]
print("lr cols", lrk, sorted({r[lrk[0]] for r in rows if r[lrk[0]]}))
va = [float(r["val_acc"]) for r in rows if r.get("val_acc")]; print("val_acc", va[0], va[-1])
