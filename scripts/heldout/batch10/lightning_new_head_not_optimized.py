# Lightning fine-tune: a small encoder pretrained on task A is re-used with a new 5-way classification head for task B.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, lightning as L
from torch import nn
from torch.utils.data import TensorDataset, DataLoader
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
torch.set_num_threads(1)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
L.seed_everything(0)
g = torch.Generator().manual_seed(0)
X = torch.randn(6000, 32, generator=g); W = torch.randn(32, 5, generator=g)
y = (torch.tanh(X @ W) * 2 + 0.3 * torch.randn(6000, 5, generator=g)).argmax(1)
tr = DataLoader(TensorDataset(X[:5000], y[:5000]), batch_size=64, shuffle=True)
va = DataLoader(TensorDataset(X[5000:], y[5000:]), batch_size=256)

class Classifier(L.LightningModule):
    def __init__(self, lr=1e-3):
        super().__init__(); self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU())
        self.head = nn.Linear(64, 10)  # task-A head
    def reset_head(self, n_classes):
        self.head = nn.Linear(64, n_classes)
    def forward(self, x): return self.head(self.encoder(x))
    def training_step(self, b, i):
        x, t = b; loss = nn.functional.cross_entropy(self(x), t); self.log("train_loss", loss); return loss
    def validation_step(self, b, i):
        x, t = b; o = self(x)
        self.log("val_loss", nn.functional.cross_entropy(o, t)); self.log("val_acc", (o.argmax(1) == t).float().mean())
    def configure_optimizers(self):
        # fine-tune the encoder with a small LR
        return torch.optim.Adam(self.encoder.parameters(), lr=self.hparams.lr)

model = Classifier()
# re-use the task-A model class for task B: swap in a fresh 5-way head
model.reset_head(5)
ck = ModelCheckpoint(dirpath=os.path.join(out, "checkpoints"), filename="{epoch:02d}", save_top_k=-1, save_last=True)
trainer = L.Trainer(max_epochs=8, logger=[CSVLogger(out, name="csv"), TensorBoardLogger(out, name="tb")],
                    log_every_n_steps=10, callbacks=[ck], enable_progress_bar=False, accelerator="cpu")
trainer.fit(model, tr, va)
