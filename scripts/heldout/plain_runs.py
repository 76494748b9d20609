"""Healthy runs made with hand-written PyTorch loops (no trainer framework)."""
import csv
import json
import math
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter

from common import (MarkovText, assert_learned, entry, regression_data, seed_all, seg_images, shape_images,
                    versions)


def made_by():
    return versions()


def tb_dir(out):
    # SummaryWriter's own default layout: runs/<Mon DD_HH-MM-SS>_<host>
    import socket
    from datetime import datetime
    return os.path.join(out, "runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname())


def small_cnn(c_in=3, classes=4, width=8):
    return nn.Sequential(
        nn.Conv2d(c_in, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, classes))


def evaluate(model, loader):
    model.eval()
    tot = correct = 0
    loss = 0.0
    with torch.no_grad():
        for x, y in loader:
            o = model(x)
            loss += F.cross_entropy(o, y, reduction="sum").item()
            correct += (o.argmax(1) == y).sum().item()
            tot += len(y)
    model.train()
    return loss / tot, correct / tot


# ---------------------------------------------------------------- 1 CNN / SGD momentum / cosine / TB
def run_cnn_sgd_cosine_tb(out):
    seed_all(51)
    x, y = shape_images(768, seed=11)
    xv, yv = shape_images(128, seed=12)
    tr = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(xv, yv), batch_size=128)
    model = small_cnn()
    epochs = 6
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(tr))
    w = SummaryWriter(tb_dir(out))
    step, seen = 0, []
    for epoch in range(epochs):
        for xb, yb in tr:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            step += 1
            if step % 5 == 0:
                w.add_scalar("Loss/train", loss.item(), step)
                w.add_scalar("LR", sched.get_last_lr()[0], step)
                seen.append(loss.item())
        vl, va_acc = evaluate(model, va)
        w.add_scalar("Loss/val", vl, step)
        w.add_scalar("Accuracy/val", va_acc, step)
    w.close()
    torch.save({"epoch": epochs, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
                "loss": seen[-1]}, os.path.join(out, "checkpoint.pt"))
    assert_learned(out, seen)
    return entry(made_by(), "classification", "scratch", "plain", log_interval=5, optimizer="sgd",
                 schedule="cosine", accum_steps=1)


# ---------------------------------------------------------------- 2 MLP regression MSE
def run_mlp_regression(out):
    seed_all(52)
    x, y = regression_data(2048, seed=21, task=1)
    xv, yv = regression_data(256, seed=22, task=1)
    mu, sd = y.mean(), y.std()
    model = nn.Sequential(nn.Linear(8, 48), nn.Tanh(), nn.Linear(48, 48), nn.Tanh(), nn.Linear(48, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    tr = DataLoader(TensorDataset(x, (y - mu) / sd), batch_size=64, shuffle=True)
    w = SummaryWriter(tb_dir(out))
    best, step, seen = float("inf"), 0, []
    for epoch in range(15):
        for xb, yb in tr:
            loss = F.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 8 == 0:
                w.add_scalar("train/mse", loss.item(), step)
                seen.append(loss.item())
        with torch.no_grad():
            pred = model(xv) * sd + mu
            vm = F.mse_loss(pred, yv).item()
            w.add_scalar("val/mse", vm, step)
            w.add_scalar("val/r2", 1 - vm / yv.var().item(), step)
        sched.step(vm)
        w.add_scalar("train/lr", opt.param_groups[0]["lr"], step)
        if vm < best:
            best = vm
            torch.save(model.state_dict(), os.path.join(out, "best_model.pt"))
    w.close()
    assert_learned(out, seen)
    return entry(made_by(), "regression", "scratch", "plain", log_interval=8, optimizer="adam",
                 schedule="plateau", accum_steps=1)


# ---------------------------------------------------------------- 3/4 RNN LMs logging CSV
def char_batches(n, seq, seed, chain=0):
    mk = MarkovText(seed=chain)
    mk.rng = np.random.default_rng(seed)
    idx = {c: i for i, c in enumerate(mk.chars)}
    return torch.tensor([[idx[c] for c in mk.sample(seq)] for _ in range(n)]), len(mk.chars)


class RNNLM(nn.Module):
    def __init__(self, vocab, d=32, cell="gru", layers=1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(d, d, num_layers=layers, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def lm_loss(model, x):
    logits = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


def run_gru_lm_csv(out):
    seed_all(53)
    os.makedirs(out, exist_ok=True)
    data, V = char_batches(960, 49, 31, chain=1)
    model = RNNLM(V, cell="gru")
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    loader = DataLoader(TensorDataset(data), batch_size=32, shuffle=True)
    f = open(os.path.join(out, "train_log.csv"), "w", newline="")
    wr = csv.writer(f)
    wr.writerow(["epoch", "step", "loss", "lr", "grad_norm", "elapsed_s"])
    t0, step, seen = time.time(), 0, []
    for epoch in range(1, 6):
        for (xb,) in loader:
            loss = lm_loss(model, xb)
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            step += 1
            if step % 3 == 0:
                wr.writerow([epoch, step, f"{loss.item():.5f}", opt.param_groups[0]["lr"], f"{gn:.4f}",
                             f"{time.time() - t0:.2f}"])
                seen.append(loss.item())
        torch.save({"epoch": epoch, "step": step, "model": model.state_dict()}, os.path.join(out, "gru_lm.pt"))
    f.close()
    assert_learned(out, seen)
    return entry(made_by(), "pretrain", "scratch", "plain", log_interval=3, optimizer="adam", schedule="constant",
                 accum_steps=1)


def run_lstm_lm_csv_val(out):
    seed_all(54)
    os.makedirs(out, exist_ok=True)
    data, V = char_batches(960, 41, 41, chain=2)
    val, _ = char_batches(96, 41, 42, chain=2)
    model = RNNLM(V, d=24, cell="lstm", layers=2)
    opt = torch.optim.SGD(model.parameters(), lr=2.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loader = DataLoader(TensorDataset(data), batch_size=24, shuffle=True)
    f = open(os.path.join(out, "metrics.csv"), "w", newline="")
    wr = csv.DictWriter(f, fieldnames=["step", "epoch", "train_loss", "train_ppl", "val_loss", "val_ppl", "lr"])
    wr.writeheader()
    step, seen = 0, []
    for epoch in range(6):
        for (xb,) in loader:
            loss = lm_loss(model, xb)
            opt.zero_grad(); loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            opt.step()
            step += 1
            if step % 10 == 0:
                wr.writerow({"step": step, "epoch": epoch, "train_loss": round(loss.item(), 5),
                             "train_ppl": round(math.exp(loss.item()), 3), "lr": sched.get_last_lr()[0]})
                seen.append(loss.item())
        with torch.no_grad():
            vl = lm_loss(model, val).item()
        wr.writerow({"step": step, "epoch": epoch, "val_loss": round(vl, 5), "val_ppl": round(math.exp(vl), 3),
                     "lr": sched.get_last_lr()[0]})
        sched.step()
    f.close()
    torch.save(model.state_dict(), os.path.join(out, "lstm_final.pt"))
    assert_learned(out, seen)
    return entry(made_by(), "pretrain", "scratch", "plain", log_interval=10, optimizer="sgd", schedule="step",
                 accum_steps=1)


# ---------------------------------------------------------------- 5 epoch-level JSONL only
def run_epoch_jsonl(out):
    seed_all(55)
    os.makedirs(out, exist_ok=True)
    x, y = shape_images(640, size=8, classes=5, channels=1, seed=51)
    xv, yv = shape_images(160, size=8, classes=5, channels=1, seed=52)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    tr = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    va = DataLoader(TensorDataset(xv, yv), batch_size=160)
    seen = []
    with open(os.path.join(out, "history.jsonl"), "w") as f:
        for epoch in range(12):
            tot = 0.0
            for xb, yb in tr:
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
                tot += loss.item() * len(yb)
            vl, vacc = evaluate(model, va)
            rec = {"epoch": epoch, "train_loss": tot / len(x), "val_loss": vl, "val_acc": vacc}
            f.write(json.dumps(rec) + "\n")
            seen.append(rec["train_loss"])
    torch.save(model.state_dict(), os.path.join(out, "model.pt"))
    assert_learned(out, seen)
    return entry(made_by(), "classification", "scratch", "plain", log_interval=None, optimizer="adamw",
                 schedule="constant", accum_steps=1)


# ---------------------------------------------------------------- 6 tiny U-Net diffusion (DDPM eps-MSE)
class TinyUNet(nn.Module):
    def __init__(self, c=1, w=12):
        super().__init__()
        self.temb = nn.Sequential(nn.Linear(16, w), nn.SiLU(), nn.Linear(w, w))
        self.inc = nn.Conv2d(c, w, 3, padding=1)
        self.down = nn.Conv2d(w, w, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(w, w, 3, padding=1)
        self.up = nn.ConvTranspose2d(w, w, 2, stride=2)
        self.outc = nn.Conv2d(2 * w, c, 3, padding=1)
        self.gn = nn.GroupNorm(4, w)

    def forward(self, x, t):
        half = 8
        freqs = torch.exp(-math.log(1000) * torch.arange(half) / half)
        a = t.float()[:, None] * freqs[None]
        e = self.temb(torch.cat([a.sin(), a.cos()], 1))[:, :, None, None]
        h0 = F.silu(self.gn(self.inc(x))) + e
        h = F.silu(self.down(h0))
        h = F.silu(self.mid(h)) + h
        h = F.silu(self.up(h))
        return self.outc(torch.cat([h, h0], 1))


def run_unet_diffusion(out):
    seed_all(56)
    os.makedirs(os.path.join(out, "checkpoints"), exist_ok=True)
    x, _, _, _ = seg_images(1024, size=16, seed=61)
    x = (x.clamp(-1, 2) - 0.5) / 0.75
    T = 200
    betas = torch.linspace(1e-4, 0.02, T)
    abar = torch.cumprod(1 - betas, 0)
    model = TinyUNet()
    ema = TinyUNet(); ema.load_state_dict(model.state_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    warm = 20
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    loader = DataLoader(TensorDataset(x), batch_size=32, shuffle=True)
    torch.save({"step": 0, "model": model.state_dict(), "ema": ema.state_dict()},
               os.path.join(out, "checkpoints", "ckpt_000000.pt"))
    w = SummaryWriter(os.path.join(out, "logs"))
    step, seen = 0, []
    for epoch in range(6):
        for (x0,) in loader:
            t = torch.randint(0, T, (len(x0),))
            noise = torch.randn_like(x0)
            ab = abar[t][:, None, None, None]
            xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
            loss = F.mse_loss(model(xt, t), noise)
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step()
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters()):
                    pe.lerp_(pm, 0.01)
            step += 1
            if step % 4 == 0:
                w.add_scalar("loss", loss.item(), step)
                w.add_scalar("grad_norm", gn.item(), step)
                w.add_scalar("lr", sched.get_last_lr()[0], step)
                seen.append(loss.item())
    w.close()
    torch.save({"step": step, "model": model.state_dict(), "ema": ema.state_dict(), "optimizer": opt.state_dict()},
               os.path.join(out, "checkpoints", f"ckpt_{step:06d}.pt"))
    assert_learned(out, [np.mean(seen[:3]), np.mean(seen[-5:])], ratio=0.8)
    return entry(made_by(), "diffusion", "scratch", "plain", init_checkpoint=True, log_interval=4,
                 optimizer="adamw", schedule="constant_with_warmup", accum_steps=1)


# ---------------------------------------------------------------- 7 single-object detection
def giou_loss(p, t):
    def xyxy(b):
        return torch.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2, b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], 1)
    p, t = xyxy(p), xyxy(t)
    lt, rb = torch.max(p[:, :2], t[:, :2]), torch.min(p[:, 2:], t[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(1)
    area = lambda b: (b[:, 2:] - b[:, :2]).clamp(min=0).prod(1)
    union = area(p) + area(t) - inter
    iou = inter / union.clamp(min=1e-6)
    clt, crb = torch.min(p[:, :2], t[:, :2]), torch.max(p[:, 2:], t[:, 2:])
    c = (crb - clt).prod(1).clamp(min=1e-6)
    return (1 - (iou - (c - union) / c)).mean(), iou


class TinyDet(nn.Module):
    def __init__(self, w=12, classes=2):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
                                      nn.Conv2d(w, w, 3, stride=2, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
                                      nn.Conv2d(w, w, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
        self.cls = nn.Linear(w * 16, classes)
        self.box = nn.Linear(w * 16, 4)

    def forward(self, x):
        h = self.backbone(x)
        return self.cls(h), self.box(h).sigmoid()


def run_detection(out):
    seed_all(57)
    os.makedirs(out, exist_ok=True)
    x, _, boxes, cls = seg_images(1024, size=16, seed=71)
    xv, _, bv, cv = seg_images(128, size=16, seed=72)
    model = TinyDet()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    iters = 240
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[160, 210], gamma=0.1)
    loader = DataLoader(TensorDataset(x, boxes, cls), batch_size=32, shuffle=True)
    it, seen = 0, []
    f = open(os.path.join(out, "metrics.json"), "w")
    t0 = time.time()
    while it < iters:
        for xb, bb, cb in loader:
            lc, pb = model(xb)
            l_cls = F.cross_entropy(lc, cb)
            l_box = F.l1_loss(pb, bb)
            l_giou, _ = giou_loss(pb, bb)
            total = l_cls + 5 * l_box + 2 * l_giou
            opt.zero_grad(); total.backward(); opt.step(); sched.step()
            it += 1
            if it % 10 == 0:
                f.write(json.dumps({"iteration": it, "total_loss": total.item(), "loss_cls": l_cls.item(),
                                    "loss_box_reg": l_box.item(), "loss_giou": l_giou.item(),
                                    "lr": sched.get_last_lr()[0], "time": (time.time() - t0) / it}) + "\n")
                seen.append(total.item())
            if it % 80 == 0:
                model.eval()
                with torch.no_grad():
                    lc, pb = model(xv)
                    _, iou = giou_loss(pb, bv)
                    ap50 = float(((iou > 0.5) & (lc.argmax(1) == cv)).float().mean())
                model.train()
                f.write(json.dumps({"iteration": it, "bbox/AP50": 100 * ap50, "bbox/mIoU": float(iou.mean())}) + "\n")
            if it >= iters:
                break
    f.close()
    torch.save({"model": model.state_dict(), "iteration": it}, os.path.join(out, "model_final.pth"))
    assert_learned(out, seen)
    return entry(made_by(), "detection", "scratch", "plain", log_interval=10, optimizer="adamw",
                 schedule="multistep", accum_steps=1)


# ---------------------------------------------------------------- 8 segmentation, dice+CE, TB
def run_segmentation_dice(out):
    seed_all(58)
    x, m, _, _ = seg_images(768, size=16, seed=81)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 2, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=4 * 24, power=0.9)
    loader = DataLoader(TensorDataset(x, m), batch_size=32, shuffle=True)
    w = SummaryWriter(tb_dir(out))
    step, seen = 0, []
    for epoch in range(4):
        for xb, mb in loader:
            logits = model(xb)
            prob = logits.softmax(1)[:, 1]
            tgt = mb.float()
            dice = 1 - (2 * (prob * tgt).sum() + 1) / (prob.sum() + tgt.sum() + 1)
            ce = F.cross_entropy(logits, mb)
            loss = ce + dice
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            step += 1
            w.add_scalar("loss/total", loss.item(), step)
            w.add_scalar("loss/ce", ce.item(), step)
            w.add_scalar("loss/dice", dice.item(), step)
            seen.append(loss.item())
        w.add_scalar("lr", sched.get_last_lr()[0], step)
    w.close()
    torch.save(model.state_dict(), os.path.join(out, "seg_model.pth"))
    assert_learned(out, seen)
    return entry(made_by(), "segmentation", "scratch", "plain", log_interval=1, optimizer="adam",
                 schedule="polynomial", accum_steps=1)


# ---------------------------------------------------------------- 9 nanoGPT-style loop, stdout log, ckpt.pt
class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        a = self.ln1(x)
        x = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block_size=32, n_embd=16, n_head=2, n_layer=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), 1),
                             persistent=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask[:T, :T])
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def run_nanogpt_style(out):
    seed_all(59)
    os.makedirs(out, exist_ok=True)
    mk = MarkovText(seed=3)
    mk.rng = np.random.default_rng(91)
    stoi = {c: i for i, c in enumerate(mk.chars)}
    train = torch.tensor([stoi[c] for c in mk.sample(20000)])
    val = torch.tensor([stoi[c] for c in mk.sample(3000)])
    bs, block = 16, 32
    model_args = dict(vocab=len(mk.chars), block_size=block, n_embd=16, n_head=2, n_layer=2)
    model = GPT(**model_args)
    max_iters, lr, min_lr, warmup = 300, 6e-3, 6e-4, 20
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.1)
    config = dict(batch_size=bs, block_size=block, learning_rate=lr, max_iters=max_iters, lr_decay_iters=max_iters,
                  min_lr=min_lr, warmup_iters=warmup, eval_interval=100, log_interval=10, grad_clip=1.0,
                  init_from="scratch", out_dir=out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    def get_batch(d):
        ix = torch.randint(len(d) - block - 1, (bs,))
        return torch.stack([d[i:i + block] for i in ix]), torch.stack([d[i + 1:i + 1 + block] for i in ix])

    def get_lr(it):
        if it < warmup:
            return lr * (it + 1) / (warmup + 1)
        r = (it - warmup) / (max_iters - warmup)
        return min_lr + 0.5 * (1 + math.cos(math.pi * r)) * (lr - min_lr)

    @torch.no_grad()
    def estimate():
        model.eval()
        res = {}
        for k, d in (("train", train), ("val", val)):
            res[k] = float(np.mean([model(*get_batch(d))[1].item() for _ in range(10)]))
        model.train()
        return res

    log = open(os.path.join(out, "train.log"), "w")
    best_val, seen = 1e9, []
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "model_args": model_args,
                "iter_num": 0, "best_val_loss": best_val, "config": config}, os.path.join(out, "ckpt_init.pt"))
    t0 = time.time()
    for it in range(max_iters + 1):
        for g in opt.param_groups:
            g["lr"] = get_lr(it)
        if it % 100 == 0:
            ls = estimate()
            log.write(f"step {it}: train loss {ls['train']:.4f}, val loss {ls['val']:.4f}\n")
            if ls["val"] < best_val and it > 0:
                best_val = ls["val"]
                log.write(f"saving checkpoint to {out}\n")
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "model_args": model_args,
                            "iter_num": it, "best_val_loss": best_val, "config": config},
                           os.path.join(out, "ckpt.pt"))
        if it == max_iters:
            break
        xb, yb = get_batch(train)
        _, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True); loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if it % 10 == 0:
            dt = time.time() - t0; t0 = time.time()
            log.write(f"iter {it}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu -100.00%\n")
            seen.append(loss.item())
    log.close()
    assert_learned(out, seen)
    return entry(made_by(), "pretrain", "scratch", "plain", init_checkpoint=True, log_interval=10,
                 optimizer="adamw", schedule="cosine", accum_steps=1)


# ---------------------------------------------------------------- 10 resume, CSV appended
def _resume_job(out, crash_at=None):
    seed_all(60)
    x, y = shape_images(960, size=12, classes=4, seed=101)
    model = small_cnn(classes=4, width=6)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    total = 150
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / total)
    ck = os.path.join(out, "last_checkpoint.pt")
    step = 0
    if os.path.exists(ck):
        st = torch.load(ck, weights_only=False)
        model.load_state_dict(st["model"]); opt.load_state_dict(st["optimizer"]); sched.load_state_dict(st["sched"])
        step = st["step"]
        torch.set_rng_state(st["rng"])
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    newfile = not os.path.exists(os.path.join(out, "log.csv"))
    f = open(os.path.join(out, "log.csv"), "a", newline="")
    wr = csv.writer(f)
    if newfile:
        wr.writerow(["step", "loss", "acc", "lr"])
    while step < total:
        for xb, yb in loader:
            o = model(xb)
            loss = F.cross_entropy(o, yb)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            step += 1
            wr.writerow([step, f"{loss.item():.5f}", f"{(o.argmax(1) == yb).float().mean().item():.4f}",
                         f"{sched.get_last_lr()[0]:.6f}"])
            f.flush()
            if step % 50 == 0:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "sched": sched.state_dict(),
                            "step": step, "rng": torch.get_rng_state()}, ck)
            if crash_at and step == crash_at:
                f.close()
                raise SystemExit("killed")
            if step >= total:
                break
    f.close()


def run_resume_csv(out):
    os.makedirs(out, exist_ok=True)
    try:
        _resume_job(out, crash_at=70)
    except SystemExit:
        pass
    _resume_job(out)
    with open(os.path.join(out, "log.csv")) as f:
        seen = [float(r["loss"]) for r in csv.DictReader(f)]
    assert_learned(out, [np.mean(seen[:5]), np.mean(seen[-10:])])
    return entry(made_by(), "classification", "scratch", "plain", resumed_at=50, log_interval=1, optimizer="sgd",
                 schedule="linear", accum_steps=1)


# ---------------------------------------------------------------- 11 fine-tune a pretrained CNN (new head)
def run_finetune_pretrained_cnn(out):
    seed_all(61)
    tmp = tempfile.mkdtemp(prefix="heldout_cnn_")
    try:
        # "pretraining" elsewhere: 4-way quadrant task; weights saved to a file
        x, y = shape_images(768, classes=4, seed=111)
        base = small_cnn(classes=4)
        opt = torch.optim.Adam(base.parameters(), lr=5e-3)
        for _ in range(3):
            for xb, yb in DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True):
                loss = F.cross_entropy(base(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
        torch.save(base.state_dict(), os.path.join(tmp, "backbone.pth"))
        # the run: load the backbone, replace the head, fine-tune on a 6-way task
        model = small_cnn(classes=4)
        model.load_state_dict(torch.load(os.path.join(tmp, "backbone.pth")))
        model[-1] = nn.Linear(16, 6)
        x2, y2 = shape_images(480, classes=6, seed=112)
        xv, yv = shape_images(120, classes=6, seed=113)
        params = [{"params": [p for n, p in model.named_parameters() if not n.startswith("9.")], "lr": 5e-4},
                  {"params": model[-1].parameters(), "lr": 5e-3}]
        opt = torch.optim.Adam(params)
        w = SummaryWriter(tb_dir(out))
        step = 0
        for epoch in range(5):
            for xb, yb in DataLoader(TensorDataset(x2, y2), batch_size=24, shuffle=True):
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
                step += 1
                if step % 2 == 0:
                    w.add_scalar("train/loss", loss.item(), step)
            vl, vacc = evaluate(model, DataLoader(TensorDataset(xv, yv), batch_size=120))
            w.add_scalar("val/loss", vl, step)
            w.add_scalar("val/acc", vacc, step)
        w.close()
        torch.save(model.state_dict(), os.path.join(out, "finetuned.pth"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry(made_by(), "classification", "pretrained", "plain", log_interval=2, optimizer="adam",
                 schedule="constant", accum_steps=1)


RUNS = [
    ("plain_cnn_bn_sgd_momentum_cosine_tb", run_cnn_sgd_cosine_tb),
    ("plain_mlp_regression_mse_tb", run_mlp_regression),
    ("plain_gru_lm_csv_epoch_step", run_gru_lm_csv),
    ("plain_lstm_lm_csv_val_rows", run_lstm_lm_csv_val),
    ("plain_mlp_epoch_only_jsonl", run_epoch_jsonl),
    ("plain_unet_ddpm_diffusion", run_unet_diffusion),
    ("plain_single_object_detection", run_detection),
    ("plain_segmentation_dice_ce_tb", run_segmentation_dice),
    ("plain_nanogpt_style_textlog", run_nanogpt_style),
    ("plain_cnn_resume_csv_append", run_resume_csv),
    ("plain_cnn_finetune_new_head", run_finetune_pretrained_cnn),
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
