"""PyTorch Lightning runs: a LightningModule around the nanoGPT-style GPT (language model or
classifier), CSVLogger and/or TensorBoardLogger, ModelCheckpoint, LearningRateMonitor, grad
norms via lightning.pytorch.utilities.grad_norm; resumed runs are a second Trainer that
fits with ckpt_path=... and so logs into the next version_N."""
import os

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.utilities import grad_norm
from torch.utils.data import DataLoader, TensorDataset

from sw_common import GPT, GPTClassifier, classes, gpt_cfg, lr_lambda, make_optimizer, markov

GPT_BASE = "_bases/tiny-gpt-markov.pt"


class LitGPT(L.LightningModule):
    def __init__(self, task="lm", lr=3e-3, sched="cosine", warmup=30, max_steps=300,
                 optim="adamw", weight_decay=0.1, n_embd=24, n_layer=2, block_size=32,
                 n_cls=3, init="scratch", base=None, log_grad_norm=True):
        super().__init__()
        self.save_hyperparameters()
        cfg = gpt_cfg(n_embd, n_layer, 2, block_size)
        self.model = GPT(cfg) if task == "lm" else GPTClassifier(cfg, n_cls)
        if init == "pretrained":
            sd = torch.load(base, weights_only=True)["model"]
            (self.model if task == "lm" else self.model.gpt).load_state_dict(sd)

    def step_loss(self, batch):
        if self.hparams.task == "lm":
            (x,) = batch
            return self.model(x[:, :-1], x[:, 1:]), None
        x, y = batch
        logits = self.model(x)
        return torch.nn.functional.cross_entropy(logits.float(), y), (logits.argmax(-1) == y).float().mean()

    def training_step(self, batch, batch_idx):
        loss, acc = self.step_loss(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        if acc is not None:
            self.log("train_acc", acc, on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        loss, acc = self.step_loss(batch)
        self.log("val_loss", loss, prog_bar=True)
        if acc is not None:
            self.log("val_acc", acc)

    def on_before_optimizer_step(self, optimizer):
        if self.hparams.log_grad_norm:
            norms = grad_norm(self, norm_type=2)
            self.log("grad_2.0_norm_total", norms["grad_2.0_norm_total"])

    def configure_optimizers(self):
        hp = self.hparams
        opt = make_optimizer(hp.optim, self, hp.lr, hp.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(hp.sched, hp.warmup, hp.max_steps))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class SaveInit(Callback):
    """Save the weights before the first update next to ModelCheckpoint's files."""

    def on_train_start(self, trainer, pl_module):
        if trainer.global_step == 0:
            d = trainer.checkpoint_callback.dirpath
            trainer.save_checkpoint(os.path.join(d, "epoch=0-step=0.ckpt"))


class StopAt(Callback):
    """The first job ends at a step (a time limit) without saving."""

    def __init__(self, step):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step >= self.step:
            trainer.should_stop = True


def run(out, spec):
    s = dict(task="lm", init="scratch", steps=300, log=10, sched="cosine", warmup=None, lr=None,
             optim="adamw", precision="32-true", accum=1, bs=16, every=100, top_k=-1,
             save_last=False, loggers=("csv",), init0=False, stop_at=None, resume_from=None,
             n_embd=24, n_layer=2, val_every=None, n_cls=3, order=1, epochs=None, n_rows=None,
             wd=0.1)
    s.update(spec)
    if s["lr"] is None:
        s["lr"] = {"adamw": 3e-3, "adamw_one_group": 3e-3, "adafactor": 3e-3, "sgd": 0.3}[s["optim"]]
        if s["init"] == "pretrained":
            s["lr"] /= 5
    if s["init"] == "pretrained":
        s["n_embd"] = 32
    n = s["n_rows"] or s["steps"] * s["bs"] * s["accum"]
    steps_total = s["steps"] if not s["epochs"] else s["epochs"] * (n // (s["bs"] * s["accum"]))
    warm = 0 if s["sched"] == "constant" else (s["warmup"] if s["warmup"] is not None
                                                else max(1, steps_total // 10))
    chain = 0 if s["init"] == "scratch" else 1
    if s["task"] == "lm":
        train = TensorDataset(markov(n, 33, seed=s["seed"], chain=chain, order=s["order"]))
        val = TensorDataset(markov(64, 33, seed=s["seed"] + 1, chain=chain, order=s["order"]))
    else:
        train = TensorDataset(*classes(n, 32, s["n_cls"], seed=s["seed"]))
        val = TensorDataset(*classes(64, 32, s["n_cls"], seed=s["seed"] + 1))

    def trainer(extra=()):
        loggers = []
        if "tb" in s["loggers"]:
            loggers.append(TensorBoardLogger(str(out), name="lightning_logs"))
        if "csv" in s["loggers"]:
            loggers.append(CSVLogger(str(out), name="lightning_logs"))
        ck = ModelCheckpoint(every_n_train_steps=s["every"], save_top_k=s["top_k"],
                             save_last=s["save_last"],
                             monitor=None if s["top_k"] == -1 else "train_loss_step")
        cbs = [ck, LearningRateMonitor(logging_interval="step")] + list(extra)
        kw = dict(max_steps=s["steps"]) if not s["epochs"] else dict(max_epochs=s["epochs"])
        return L.Trainer(accelerator="cpu", devices=1, logger=loggers, callbacks=cbs,
                         log_every_n_steps=s["log"], precision=s["precision"],
                         accumulate_grad_batches=s["accum"], gradient_clip_val=1.0,
                         val_check_interval=s["val_every"] or 1.0, limit_val_batches=2,
                         num_sanity_val_steps=0, enable_progress_bar=False,
                         enable_model_summary=False, deterministic=False, **kw)

    def loaders():
        g = torch.Generator().manual_seed(s["seed"])
        return (DataLoader(train, batch_size=s["bs"], shuffle=True, generator=g),
                DataLoader(val, batch_size=32))

    def module():
        L.seed_everything(s["seed"], verbose=False)
        return LitGPT(task=s["task"], lr=s["lr"], sched=s["sched"], warmup=warm,
                      max_steps=steps_total, optim=s["optim"], weight_decay=s["wd"],
                      n_embd=s["n_embd"], n_layer=s["n_layer"], n_cls=s["n_cls"], init=s["init"],
                      base=GPT_BASE if s["init"] == "pretrained" else None)

    extra = [SaveInit()] if s["init0"] else []
    if s["stop_at"]:
        t = trainer(extra + [StopAt(s["stop_at"])])
        t.fit(module(), *loaders())
        ck = os.path.join(t.checkpoint_callback.dirpath,
                          f"epoch=0-step={s['resume_from']}.ckpt")
        assert os.path.exists(ck), os.listdir(t.checkpoint_callback.dirpath)
        t2 = trainer()
        t2.fit(module(), *loaders(), ckpt_path=ck)
    else:
        t = trainer(extra)
        t.fit(module(), *loaders())
    return t
