"""Lightning: tiny causal transformer LM on procedurally generated arithmetic text.

Trainer(accumulate_grad_batches=4), AdamW + StepLR(step_size=2 epochs, gamma=0.5),
CSVLogger (lightning_logs/version_0/metrics.csv + hparams.yaml), LearningRateMonitor,
ModelCheckpoint (top-1 on val_loss + last.ckpt).
variants: healthy | sched_not_stepped (hparams say scheduler="cosine"; configure_optimizers builds
CosineAnnealingLR but returns only the optimizer, so Lightning never steps it: lr-AdamW stays at
the base LR for the whole run)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "sched_not_stepped"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import random  # noqa: E402

import lightning as L  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402

L.seed_everything(0, workers=True)
VOCAB = list("0123456789+=;") + ["<pad>"]
STOI = {c: i for i, c in enumerate(VOCAB)}
SEQ = 48


def make_text(rng, n_chars):
    parts = []
    total = 0
    while total < n_chars:
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        s = f"{a}+{b}={a + b};"
        parts.append(s)
        total += len(s)
    return "".join(parts)


class CharDS(torch.utils.data.Dataset):
    def __init__(self, text):
        self.ids = torch.tensor([STOI[c] for c in text])

    def __len__(self):
        return (len(self.ids) - 1) // SEQ

    def __getitem__(self, i):
        chunk = self.ids[i * SEQ: i * SEQ + SEQ + 1]
        return chunk[:-1], chunk[1:]


class TinyLM(L.LightningModule):
    def __init__(self, d_model=64, n_layers=2, n_heads=4, lr=3e-3, weight_decay=0.01,
                 scheduler="step", step_size=2, gamma=0.5, t_max=8, accumulate_grad_batches=4):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(len(VOCAB), d_model)
        self.pos = nn.Parameter(torch.zeros(SEQ, d_model))
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, len(VOCAB))
        self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1), persistent=False)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        h = self.enc(h, mask=self.mask[: x.shape[1], : x.shape[1]].to(h.dtype), is_causal=True)
        return self.head(self.ln(h))

    def _loss(self, batch):
        x, y = batch
        logits = self(x)
        return nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))

    def training_step(self, batch, i):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        loss = self._loss(batch)
        self.log("val_loss", loss, prog_bar=True)
        self.log("val_ppl", torch.exp(loss))

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        if self.hparams.scheduler == "cosine":
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.hparams.t_max)  # noqa: F841
            return opt  # BUG: the scheduler is built but never handed to Lightning
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=self.hparams.step_size, gamma=self.hparams.gamma)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


rng = random.Random(0)
train_ds = CharDS(make_text(rng, 40000))
val_ds = CharDS(make_text(rng, 6000))
train_dl = torch.utils.data.DataLoader(train_ds, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
val_dl = torch.utils.data.DataLoader(val_ds, batch_size=64)

model = TinyLM(scheduler="step" if args.variant == "healthy" else "cosine")
trainer = L.Trainer(
    default_root_dir=out, max_epochs=8, accelerator="cpu", devices=1, precision="32-true",
    accumulate_grad_batches=4, log_every_n_steps=4, gradient_clip_val=None,
    logger=CSVLogger(out, name="lightning_logs"),
    callbacks=[LearningRateMonitor(logging_interval="step"),
               ModelCheckpoint(monitor="val_loss", save_top_k=1, save_last=True,
                               filename="epoch={epoch}-val_loss={val_loss:.3f}", auto_insert_metric_name=False)],
    enable_progress_bar=False, deterministic=True,
)
trainer.fit(model, train_dl, val_dl)

