"""Healthy runs made with PyTorch Lightning (lightning 2.x)."""
import csv
import math
import os
import shutil
import warnings

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from torch.utils.data import DataLoader, TensorDataset

from common import MarkovText, assert_learned, entry, regression_data, seed_all, seg_images, shape_images, versions

warnings.filterwarnings("ignore")


def made_by():
    return versions("lightning")


def trainer(out, **kw):
    base = dict(default_root_dir=out, accelerator="cpu", devices=1, enable_progress_bar=False,
                enable_model_summary=False, num_sanity_val_steps=0, deterministic=True)
    base.update(kw)
    return L.Trainer(**base)


def csv_losses(path, key):
    with open(path) as f:
        return [float(r[key]) for r in csv.DictReader(f) if r.get(key)]


# ---------------------------------------------------------------- CNN classifier
class CNN(L.LightningModule):
    def __init__(self, classes=4, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, classes))

    def training_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, weight_decay=5e-4)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        return [opt], [sched]


def image_loaders(n=640, seed=0, bs=32, classes=4):
    x, y = shape_images(n, classes=classes, seed=seed)
    xv, yv = shape_images(128, classes=classes, seed=seed + 1)
    return (DataLoader(TensorDataset(x, y), batch_size=bs, shuffle=True),
            DataLoader(TensorDataset(xv, yv), batch_size=64))


def run_cnn_bn_csv(out):
    seed_all(31)
    tr, va = image_loaders()
    t = trainer(out, max_epochs=6, log_every_n_steps=1, logger=CSVLogger(out))
    t.fit(CNN(), tr, va)
    assert_learned(out, csv_losses(os.path.join(t.logger.log_dir, "metrics.csv"), "train_loss_step"))
    return entry(made_by(), "classification", "scratch", "lightning", log_interval=1, optimizer="sgd",
                 schedule="step", accum_steps=1)


# ---------------------------------------------------------------- regression MLP
class MLPReg(L.LightningModule):
    def __init__(self, d=8, h=32, lr=3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, h), nn.GELU(), nn.Linear(h, 1))

    def training_step(self, b, i):
        loss = F.mse_loss(self.net(b[0]), b[1])
        self.log("train/mse", loss)
        return loss

    def validation_step(self, b, i):
        p = self.net(b[0])
        self.log("val/mse", F.mse_loss(p, b[1]))
        self.log("val/mae", F.l1_loss(p, b[1]))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def run_mlp_regression_tb_val_interval(out):
    seed_all(32)
    x, y = regression_data(2048, seed=1)
    xv, yv = regression_data(256, seed=2)
    tr = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(xv, yv), batch_size=128)
    t = trainer(out, max_epochs=3, log_every_n_steps=5, val_check_interval=0.25,
                logger=TensorBoardLogger(out, name="tb", default_hp_metric=False))
    m = MLPReg()
    t.fit(m, tr, va)
    assert t.callback_metrics["val/mse"] < 0.5 * float(yv.var())
    return entry(made_by(), "regression", "scratch", "lightning", log_interval=5, optimizer="adam",
                 schedule="constant", accum_steps=1)


# ---------------------------------------------------------------- tiny transformer LM, accumulate 2
class TinyLM(L.LightningModule):
    def __init__(self, vocab=17, d=24, layers=2, seq=32, lr=3e-3, total_steps=100):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        return self.head(self.enc(h, mask=self.mask[: x.shape[1], : x.shape[1]], is_causal=True))

    def _loss(self, b):
        x = b[0]
        logits = self(x[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))

    def training_step(self, b, i):
        loss = self._loss(b)
        self.log("train_loss", loss)
        self.log("train_ppl", loss.exp())
        return loss

    def validation_step(self, b, i):
        self.log("val_loss", self._loss(b))

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01, betas=(0.9, 0.95))
        warm = 10
        total = self.hparams.total_steps
        f = lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warm) / max(1, total - warm))))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.LambdaLR(opt, f),
                                                   "interval": "step"}}


def token_data(n, seq, seed, chain=0):
    mk = MarkovText(seed=chain)
    mk.rng = np.random.default_rng(seed)
    idx = {c: i for i, c in enumerate(mk.chars)}
    return torch.tensor([[idx[c] for c in mk.sample(seq)] for _ in range(n)])


def run_lm_accum2_cosine(out):
    seed_all(33)
    x, xv = token_data(960, 33, 1), token_data(64, 33, 2)
    tr = DataLoader(TensorDataset(x), batch_size=16, shuffle=True)
    va = DataLoader(TensorDataset(xv), batch_size=64)
    epochs = 4
    total = epochs * len(tr) // 2
    loggers = [CSVLogger(out, name="csv"), TensorBoardLogger(out, name="tb", default_hp_metric=False)]
    t = trainer(out, max_epochs=epochs, accumulate_grad_batches=2, log_every_n_steps=2, logger=loggers,
                gradient_clip_val=1.0, callbacks=[LearningRateMonitor(logging_interval="step"),
                                                  ModelCheckpoint(monitor="val_loss", save_top_k=1)])
    t.fit(TinyLM(total_steps=total), tr, va)
    assert_learned(out, csv_losses(os.path.join(loggers[0].log_dir, "metrics.csv"), "train_loss"))
    return entry(made_by(), "pretrain", "scratch", "lightning", log_interval=2, optimizer="adamw",
                 schedule="cosine", accum_steps=2)


# ---------------------------------------------------------------- resume from last.ckpt
class Crash(Callback):
    def __init__(self, at):
        self.at = at

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == self.at:
            raise RuntimeError("simulated node failure")


def run_resume_last_ckpt(out):
    seed_all(34)
    tr, va = image_loaders(n=640, seed=5)  # 20 batches / epoch
    ck = os.path.join(out, "checkpoints")

    def mk(extra):
        return trainer(out, max_epochs=8, log_every_n_steps=5, logger=CSVLogger(out),
                       callbacks=[ModelCheckpoint(dirpath=ck, save_last=True, every_n_train_steps=40)] + extra)

    t = mk([Crash(95)])
    try:
        t.fit(CNN(lr=0.03), tr, va)
    except RuntimeError:
        pass
    step = torch.load(os.path.join(ck, "last.ckpt"), weights_only=False)["global_step"]
    seed_all(34)
    t2 = mk([])  # CSVLogger picks the next version: lightning_logs/version_1
    t2.fit(CNN(lr=0.03), tr, va, ckpt_path=os.path.join(ck, "last.ckpt"))
    # keep at most 2 checkpoints (last + the newest periodic one)
    kept = sorted((f for f in os.listdir(ck) if f != "last.ckpt"), key=lambda f: os.path.getmtime(os.path.join(ck, f)))
    for f in kept[:-1]:
        os.remove(os.path.join(ck, f))
    return entry(made_by(), "classification", "scratch", "lightning", resumed_at=int(step), log_interval=5,
                 optimizer="sgd", schedule="step", accum_steps=1)


# ---------------------------------------------------------------- GRU LM in bf16-mixed
class GRULM(L.LightningModule):
    def __init__(self, vocab=17, d=32, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def training_step(self, b, i):
        x = b[0]
        h, _ = self.rnn(self.emb(x[:, :-1]))
        logits = self.head(h)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1))
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.RMSprop(self.parameters(), lr=self.hparams.lr)
        return [opt], [torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7)]


def run_gru_bf16(out):
    seed_all(35)
    x = token_data(800, 41, 3, chain=1)
    tr = DataLoader(TensorDataset(x), batch_size=32, shuffle=True)
    t = trainer(out, max_epochs=4, precision="bf16-mixed", log_every_n_steps=3,
                logger=TensorBoardLogger(out, name="", version="gru_bf16"))
    t.fit(GRULM(), tr)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(t.logger.log_dir)
    ea.Reload()
    assert_learned(out, [e.value for e in ea.Scalars("loss")])
    return entry(made_by(), "pretrain", "scratch", "lightning", precision="bf16", log_interval=3,
                 optimizer="rmsprop", schedule="exponential", accum_steps=1)


# ---------------------------------------------------------------- segmentation
class TinySeg(L.LightningModule):
    def __init__(self, lr=5e-3):
        super().__init__()
        self.save_hyperparameters()
        self.down = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.ConvTranspose2d(8, 8, 2, stride=2), nn.ReLU())
        self.out = nn.Conv2d(16, 2, 1)
        self.skip = nn.Conv2d(1, 8, 3, padding=1)

    def forward(self, x):
        return self.out(torch.cat([self.up(self.down(x)), self.skip(x)], 1))

    def step(self, b, stage):
        x, m = b
        logits = self(x)
        loss = F.cross_entropy(logits, m)
        pred = logits.argmax(1)
        inter = ((pred == 1) & (m == 1)).sum().float()
        union = ((pred == 1) | (m == 1)).sum().float().clamp(min=1)
        self.log(f"{stage}_loss", loss, prog_bar=True)
        self.log(f"{stage}_iou", inter / union)
        return loss

    def training_step(self, b, i):
        return self.step(b, "train")

    def validation_step(self, b, i):
        self.step(b, "val")

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1),
                "monitor": "val_loss"}


def run_segmentation(out):
    seed_all(36)
    x, m, _, _ = seg_images(512, seed=3)
    xv, mv, _, _ = seg_images(64, seed=4)
    tr = DataLoader(TensorDataset(x, m), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(xv, mv), batch_size=64)
    t = trainer(out, max_epochs=5, log_every_n_steps=4, logger=CSVLogger(out, name="seg"),
                callbacks=[ModelCheckpoint(monitor="val_iou", mode="max", filename="best-{epoch}-{val_iou:.3f}")])
    t.fit(TinySeg(), tr, va)
    assert_learned(out, csv_losses(os.path.join(t.logger.log_dir, "metrics.csv"), "train_loss"))
    return entry(made_by(), "segmentation", "scratch", "lightning", log_interval=4, optimizer="adam",
                 schedule="plateau", accum_steps=1)


RUNS = [
    ("lit_cnn_bn_csv_every_step", run_cnn_bn_csv),
    ("lit_mlp_regression_tb_val_check_interval", run_mlp_regression_tb_val_interval),
    ("lit_transformer_lm_accum2_cosine", run_lm_accum2_cosine),
    ("lit_cnn_resume_last_ckpt_version1", run_resume_last_ckpt),
    ("lit_gru_lm_bf16_mixed", run_gru_bf16),
    ("lit_segmentation_tiny_unet", run_segmentation),
]


def main(out_dir, only=None):
    answers = {}
    for name, fn in RUNS:
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        answers[name] = fn(d)
        print("done", name, flush=True)
    return answers
