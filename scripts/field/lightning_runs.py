"""PyTorch Lightning runs: a LightningModule around a tiny GPT, TensorBoardLogger + CSVLogger
in one version dir, ModelCheckpoint(save_last=...), LearningRateMonitor and grad-norm logging
via lightning.pytorch.utilities.grad_norm, written the way the Lightning docs show."""
import math
import sys

import lightning as L
import torch
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.utilities import grad_norm
from torch.utils.data import DataLoader, TensorDataset

from common import VOCAB, markov, record, run_dir, versions
from nanogpt_layout import GPT


class LitLM(L.LightningModule):
    def __init__(self, lr=3e-3, warmup_steps=30, max_steps=300, weight_decay=0.1,
                 n_embd=24, decay_split=True, sched_interval="step", freeze_at=None,
                 freeze_prefix="transformer.h.0."):
        super().__init__()
        self.save_hyperparameters()
        torch.manual_seed(0)
        self.model = GPT(dict(n_layer=2, n_head=2, n_embd=n_embd, block_size=32, bias=True,
                              vocab_size=VOCAB, dropout=0.0))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        hp = self.hparams
        if hp.freeze_at is not None and self.global_step == hp.freeze_at:
            for n, p in self.model.named_parameters():
                if n.startswith(hp.freeze_prefix):
                    p.requires_grad_(False)
        loss = self.model(x[:, :-1], x[:, 1:])
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        (x,) = batch
        self.log("val_loss", self.model(x[:, :-1], x[:, 1:]), prog_bar=True)

    def on_before_optimizer_step(self, optimizer):
        self.log_dict(grad_norm(self, norm_type=2))

    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
        optimizer.zero_grad(set_to_none=self.hparams.freeze_at is None)

    def configure_optimizers(self):
        hp = self.hparams
        if hp.decay_split:
            decay = [p for p in self.parameters() if p.dim() >= 2]
            nodecay = [p for p in self.parameters() if p.dim() < 2]
            opt = torch.optim.AdamW([{"params": decay, "weight_decay": hp.weight_decay},
                                     {"params": nodecay, "weight_decay": 0.0}], lr=hp.lr)
        else:
            opt = torch.optim.AdamW(self.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)

        def lam(step):
            if step < hp.warmup_steps:
                return (step + 1) / hp.warmup_steps
            r = (step - hp.warmup_steps) / max(1, hp.max_steps - hp.warmup_steps)
            return 0.5 * (1 + math.cos(math.pi * min(1.0, r)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lam)
        if hp.sched_interval == "step":
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
        return [opt], [sched]  # default interval is "epoch"


def train(name, save_last=True, every=150, **hp):
    out = run_dir(name)
    torch.manual_seed(0)
    train_ds = TensorDataset(markov(16 * 300, 33, seed=1))
    val_ds = TensorDataset(markov(64, 33, seed=2))
    model = LitLM(**hp)
    loggers = [TensorBoardLogger(out, name="lightning_logs"), CSVLogger(out, name="lightning_logs")]
    ckpt = ModelCheckpoint(every_n_train_steps=every, save_top_k=-1, save_last=save_last)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=300, logger=loggers,
                        callbacks=[ckpt, LearningRateMonitor(logging_interval="step")],
                        log_every_n_steps=10, val_check_interval=100, limit_val_batches=4,
                        gradient_clip_val=1.0, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, DataLoader(train_ds, batch_size=16, shuffle=True),
                DataLoader(val_ds, batch_size=16))


MADE = None
RUNS = {
    "lightning_healthy": (dict(), None, [], {}),
    "lightning_sched_epoch_interval": (
        dict(sched_interval="epoch", save_last="link"),
        "LambdaLR warmup+cosine returned without interval='step': stepped once per epoch, so "
        "the LR sits at the first warmup value for the whole (one-epoch) run",
        ["S2.1", "O8", "O23", "S2.2"],
        {"schedule": "warmup_cosine", "warmup_steps": "30", "lr_max": "0.003"}),
    "lightning_no_decay_split": (
        dict(decay_split=False),
        "AdamW(self.parameters(), weight_decay=0.1): biases and LayerNorm weights decayed",
        ["S6.1", "O6"], {}),
    "lightning_frozen_in_optimizer": (
        dict(freeze_at=150),
        "block 0 frozen with requires_grad_(False) at step 150 but left in AdamW, grads zeroed "
        "with set_to_none=False: momentum and decay keep moving it",
        ["O17"], {"frozen": "model.transformer.h.0"}),
}

if __name__ == "__main__":
    made = versions("torch", "lightning")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts)
