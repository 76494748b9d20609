"""Healthy runs made with plain loops driven by Hugging Face accelerate."""
import math
import os
import shutil

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import ProjectConfiguration, set_seed
from torch.utils.data import DataLoader, TensorDataset

from common import MarkovText, assert_learned, entry, regression_data, seed_all, shape_images, versions


def made_by(*extra):
    return versions("accelerate", *extra)


def tb_scalars(logdir, tag):
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
    vals = []
    for root, _, files in os.walk(logdir):
        for f in sorted(files):
            if f.startswith("events.out.tfevents"):
                from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
                ea = EventAccumulator(os.path.join(root, f))
                ea.Reload()
                if tag in ea.Tags()["scalars"]:
                    vals += [(e.step, e.value) for e in ea.Scalars(tag)]
    return [v for _, v in sorted(vals)]


def lm_tensors(n, seq, seed, chain=0):
    mk = MarkovText(seed=chain)
    mk.rng = np.random.default_rng(seed)
    idx = {c: i for i, c in enumerate(mk.chars)}
    return torch.tensor([[idx[c] for c in mk.sample(seq)] for _ in range(n)])


def run_lm_tensorboard_save_state(out):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    set_seed(41)
    acc = Accelerator(log_with="tensorboard",
                      project_config=ProjectConfiguration(project_dir=out, automatic_checkpoint_naming=True,
                                                          total_limit=2))
    cfg = GPTNeoXConfig(vocab_size=17, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, rotary_pct=0.5)
    model = GPTNeoXForCausalLM(cfg)
    data = DataLoader(TensorDataset(lm_tensors(1024, 40, 1)), batch_size=16, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.1)
    steps = 2 * len(data)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, total_steps=steps, pct_start=0.1)
    model, opt, data, sched = acc.prepare(model, opt, data, sched)
    acc.init_trackers("tiny_neox", config={"lr": 5e-3, "batch_size": 16, "epochs": 2})
    step = 0
    for epoch in range(2):
        model.train()
        for (x,) in data:
            loss = model(input_ids=x, labels=x).loss
            acc.backward(loss)
            gn = acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step(); opt.zero_grad()
            step += 1
            if step % 4 == 0:
                acc.log({"train/loss": loss.item(), "train/lr": sched.get_last_lr()[0],
                         "train/grad_norm": float(gn)}, step=step)
            if step % 48 == 0:
                acc.save_state()
    acc.save_state()
    acc.end_training()
    assert_learned(out, tb_scalars(out, "train/loss"))
    return entry(made_by("transformers"), "pretrain", "scratch", "accelerate", log_interval=4, optimizer="adamw",
                 schedule="onecycle", accum_steps=1)


class MLP(nn.Module):
    def __init__(self, d_in, h, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, h), nn.LayerNorm(h), nn.GELU(), nn.Linear(h, h), nn.GELU(),
                                 nn.Linear(h, d_out))

    def forward(self, x):
        return self.net(x)


def run_cls_bf16(out):
    set_seed(42)
    acc = Accelerator(mixed_precision="bf16", log_with="tensorboard", project_dir=out)
    x, y = shape_images(1024, size=8, classes=5, channels=1, seed=1)
    xv, yv = shape_images(128, size=8, classes=5, channels=1, seed=2)
    x, xv = x.flatten(1), xv.flatten(1)
    model = MLP(64, 32, 5)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    tr = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(xv, yv), batch_size=128)
    model, opt, tr, va = acc.prepare(model, opt, tr, va)
    acc.init_trackers("cls_bf16")
    step = 0
    for epoch in range(4):
        model.train()
        for xb, yb in tr:
            with acc.autocast():
                loss = F.cross_entropy(model(xb), yb)
            acc.backward(loss)
            opt.step(); opt.zero_grad()
            step += 1
            acc.log({"loss": loss.item()}, step=step)
        model.eval()
        with torch.no_grad():
            correct = total = 0
            vloss = 0.0
            for xb, yb in va:
                logits = model(xb)
                vloss += F.cross_entropy(logits.float(), yb, reduction="sum").item()
                correct += (logits.argmax(1) == yb).sum().item(); total += len(yb)
        acc.log({"val_loss": vloss / total, "val_accuracy": correct / total, "epoch": epoch}, step=step)
    acc.wait_for_everyone()
    acc.save_model(model, os.path.join(out, "final"))
    acc.end_training()
    assert_learned(out, tb_scalars(out, "loss"))
    return entry(made_by(), "classification", "scratch", "accelerate", precision="bf16", log_interval=1,
                 optimizer="adam", schedule="constant", accum_steps=1)


def _resume_job(out, crash_at=None, resume_from=None, total=120):
    set_seed(43)
    acc = Accelerator(log_with="tensorboard", project_dir=out)
    x, y = regression_data(1920, seed=5, task=3)
    model = MLP(8, 32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    data = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)  # 60 batches / epoch
    model, opt, data, sched = acc.prepare(model, opt, data, sched)
    acc.init_trackers("mlp_regression")
    step = 0
    if resume_from:
        acc.load_state(resume_from)
        step = int(os.path.basename(resume_from).split("_")[-1])
    while step < total:
        epoch = step // len(data)
        skip = step % len(data)
        loader = acc.skip_first_batches(data, skip) if skip else data
        for xb, yb in loader:
            loss = F.mse_loss(model(xb), yb)
            acc.backward(loss)
            opt.step(); sched.step(); opt.zero_grad()
            step += 1
            acc.log({"mse": loss.item(), "lr": sched.get_last_lr()[0], "epoch": epoch}, step=step)
            if step % 40 == 0:
                acc.save_state(os.path.join(out, "checkpoints", f"step_{step}"))
            if crash_at and step == crash_at:
                acc.end_training()
                raise RuntimeError("simulated OOM-kill")
            if step >= total:
                break
    acc.end_training()


def run_regression_resume_load_state(out):
    try:
        _resume_job(out, crash_at=95)
    except RuntimeError:
        pass
    _resume_job(out, resume_from=os.path.join(out, "checkpoints", "step_80"))
    shutil.rmtree(os.path.join(out, "checkpoints", "step_40"))
    mse = tb_scalars(out, "mse")
    assert_learned(out, [np.mean(mse[:5]), np.mean(mse[-10:])])
    return entry(made_by(), "regression", "scratch", "accelerate", resumed_at=80, log_interval=1, optimizer="sgd",
                 schedule="cosine", accum_steps=1)


def run_cnn_grad_accum_init_state(out):
    set_seed(44)
    acc = Accelerator(gradient_accumulation_steps=4, log_with="tensorboard", project_dir=out)
    x, y = shape_images(768, size=12, classes=3, seed=6)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 8, 3, padding=1), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model, opt, data = acc.prepare(model, opt, data)
    acc.init_trackers("cnn_accum4")
    acc.save_state(os.path.join(out, "ckpt", "step_0"))  # initial weights
    step = 0
    for epoch in range(3):
        for xb, yb in data:
            with acc.accumulate(model):
                loss = F.cross_entropy(model(xb), yb)
                acc.backward(loss)
                opt.step(); opt.zero_grad()
            if acc.sync_gradients:
                step += 1
                if step % 2 == 0:
                    acc.log({"train_loss": loss.item()}, step=step)
    acc.save_state(os.path.join(out, "ckpt", f"step_{step}"))
    acc.end_training()
    ls = tb_scalars(out, "train_loss")
    assert_learned(out, [np.mean(ls[:3]), np.mean(ls[-3:])])
    return entry(made_by(), "classification", "scratch", "accelerate", init_checkpoint=True, log_interval=2,
                 optimizer="adamw", schedule="constant", accum_steps=4)


RUNS = [
    ("accel_neox_lm_tensorboard_save_state", run_lm_tensorboard_save_state),
    ("accel_mlp_cls_bf16", run_cls_bf16),
    ("accel_regression_resume_load_state", run_regression_resume_load_state),
    ("accel_cnn_grad_accum4_init_state", run_cnn_grad_accum_init_state),
]


def main(out_dir, only=None):
    answers = {}
    for name, fn in RUNS:
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        AcceleratorState._reset_state(True)  # each run is its own "process"
        answers[name] = fn(d)
        print("done", name, flush=True)
    return answers
