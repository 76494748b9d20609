# HEALTHY: Lightning MLP classifier; the first attempt crashes during epoch 5 (simulated node failure),
# the job is relaunched and resumes from last.ckpt. CSVLogger writes version_0 (crashed) and version_1 (resumed).
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, lightning as L
from torch import nn
from torch.utils.data import TensorDataset, DataLoader
from lightning.pytorch.callbacks import ModelCheckpoint, Callback, LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger
torch.set_num_threads(1)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)

g = torch.Generator().manual_seed(0)
X = torch.randn(6000, 24, generator=g); W = torch.randn(24, 6, generator=g)
y = (X @ W + 0.5 * torch.randn(6000, 6, generator=g)).argmax(1)
tr = DataLoader(TensorDataset(X[:5000], y[:5000]), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(1))
va = DataLoader(TensorDataset(X[5000:], y[5000:]), batch_size=256)

class Net(L.LightningModule):
    def __init__(self):
        super().__init__(); self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 6))
    def training_step(self, b, i):
        x, t = b; loss = nn.functional.cross_entropy(self.net(x), t); self.log("train_loss", loss); return loss
    def validation_step(self, b, i):
        x, t = b; o = self.net(x)
        self.log("val_loss", nn.functional.cross_entropy(o, t)); self.log("val_acc", (o.argmax(1) == t).float().mean())
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=1e-4)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)}

class NodeFailure(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.current_epoch == 4 and batch_idx == 30:
            raise RuntimeError("simulated node failure (preempted)")

def trainer(cbs):
    ck = ModelCheckpoint(dirpath=os.path.join(out, "checkpoints"), filename="{epoch:02d}-{val_loss:.4f}",
                         save_top_k=-1, save_last=True)
    return L.Trainer(max_epochs=10, logger=CSVLogger(out, name="lightning_logs"), log_every_n_steps=10,
                     callbacks=[ck, LearningRateMonitor("step")] + cbs, enable_progress_bar=False,
                     accelerator="cpu", deterministic=True)

L.seed_everything(0)
try:
    trainer([NodeFailure()]).fit(Net(), tr, va)
except RuntimeError as e:
    print("attempt 1 crashed:", e)
L.seed_everything(0)
trainer([]).fit(Net(), tr, va, ckpt_path=os.path.join(out, "checkpoints", "last.ckpt"))
