# Lightning: pretrain a small 1D-CNN encoder on 6-class synthetic waveforms, then fine-tune it (new head) on a 3-class task.
# Layout: RUNS/NAME/pretrain/{lightning_logs/version_0/metrics.csv,hparams.yaml,checkpoints/} and RUNS/NAME/finetune/...
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
T = 64
def waves(n, classes, seed, fbase):
    g = torch.Generator().manual_seed(seed); y = torch.randint(0, classes, (n,), generator=g)
    t = torch.linspace(0, 1, T)
    ph = torch.rand(n, 1, generator=g) * 6.28
    x = torch.sin(2 * 3.1416 * (fbase + 1.5 * y[:, None]) * t[None] + ph) + 0.9 * torch.randn(n, T, generator=g)
    return TensorDataset(x[:, None, :], y)
class Net(L.LightningModule):
    def __init__(self, n_classes, lr, encoder_ckpt=None):
        super().__init__(); self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                     nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.head = nn.Linear(32, n_classes)
    def forward(self, x): return self.head(self.encoder(x))
    def step(self, b, tag):
        x, y = b; o = self(x); loss = F.cross_entropy(o, y)
        self.log(f"{tag}_loss", loss, on_step=(tag == "train"), on_epoch=True, prog_bar=True)
        self.log(f"{tag}_acc", (o.argmax(1) == y).float().mean(), on_epoch=True, on_step=False)
        return loss
    def training_step(self, b, i): return self.step(b, "train")
    def validation_step(self, b, i): self.step(b, "val")
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=1e-4)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)}
def fit(model, sub, tr, va, epochs):
    d = os.path.join(root, sub)
    ck = ModelCheckpoint(monitor="val_acc", mode="max", save_last=True, save_top_k=1)
    trn = L.Trainer(max_epochs=epochs, default_root_dir=d, logger=CSVLogger(d), callbacks=[ck, LearningRateMonitor("epoch")],
                    accelerator="cpu", devices=1, enable_progress_bar=False, log_every_n_steps=10, deterministic=True)
    trn.fit(model, DataLoader(tr, batch_size=64, shuffle=True), DataLoader(va, batch_size=256))
    return ck.best_model_path
# stage 1: pretraining
pre = Net(6, 3e-3)
best = fit(pre, "pretrain", waves(3000, 6, 1, 2.0), waves(600, 6, 2, 2.0), 8)
# stage 2: fine-tune from the pretrained encoder on a smaller 3-class dataset (different frequencies)
ft = Net(3, 1e-3, encoder_ckpt=best)
sd = torch.load(best, map_location="cpu", weights_only=False)["state_dict"]
ft.encoder.load_state_dict({k[len("encoder."):]: v for k, v in sd.items() if k.startswith("encoder.")})
fit(ft, "finetune", waves(600, 3, 3, 3.0), waves(300, 3, 4, 3.0), 8)
import csv
for sub in ["pretrain", "finetune"]:
    rows = [r for r in csv.DictReader(open(f"{root}/{sub}/lightning_logs/version_0/metrics.csv")) if r.get("val_acc")]
    a = [float(r["val_acc"]) for r in rows]; l = [float(r["val_loss"]) for r in rows]
    print(sub, "val_acc", a[0], a[-1], "val_loss", l[0], l[-1])
    assert a[-1] > 0.7 and l[-1] < l[0], (sub, a, l)
