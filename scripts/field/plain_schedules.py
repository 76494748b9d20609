"""Plain PyTorch loops with torch.optim.lr_scheduler schedules the other runs lack (CyclicLR,
CosineAnnealingWarmRestarts, SequentialLR of LinearLR warmup then ExponentialLR), each a small
MLP classifier on a synthetic 5-class task of 4,096 rows, written the way the PyTorch docs show:
SummaryWriter scalars (train/loss, train/lr, train/grad_norm every 10 steps, val/loss and
val/acc every 100) and torch.save({'model', 'optimizer', 'scheduler', 'step'}) every 200 steps.
AdamW runs keep biases in a weight_decay=0 group. The set is small, so the training loss ends
near 0.1 while the validation loss, still falling at every eval, ends near 0.17: a
generalisation gap of about 90% of the training loss on a healthy run."""
import sys

import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

from common import record, run_dir, versions


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    w = torch.randn(20, 5, generator=torch.Generator().manual_seed(99))
    y = (x @ w + 0.3 * torch.randn(n, 5, generator=g)).argmax(1)
    return x, y


def adamw(m):
    decay = [p for p in m.parameters() if p.ndim >= 2]
    rest = [p for p in m.parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": rest, "weight_decay": 0.0}], lr=3e-3)


def train(name):
    out = run_dir(name)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5))
    lrs = torch.optim.lr_scheduler
    if name == "plain_cyclic_lr_healthy":
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        sch = lrs.CyclicLR(opt, base_lr=0.005, max_lr=0.05, step_size_up=100)
    elif name == "plain_warm_restarts_healthy":
        opt = adamw(m)
        sch = lrs.CosineAnnealingWarmRestarts(opt, T_0=150, eta_min=1e-5)
    else:
        opt = adamw(m)
        sch = lrs.SequentialLR(opt, [lrs.LinearLR(opt, 0.01, 1.0, 50), lrs.ExponentialLR(opt, 0.995)],
                               milestones=[50])
    x, y = data(4096, 0)
    xv, yv = data(512, 1)
    tb = SummaryWriter(str(out / "tb"))
    for s in range(600):
        i = torch.randint(0, len(x), (64,))
        loss = nn.functional.cross_entropy(m(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sch.step()
        if s % 10 == 0:
            tb.add_scalar("train/loss", loss.item(), s)
            tb.add_scalar("train/lr", opt.param_groups[0]["lr"], s)
            tb.add_scalar("train/grad_norm", gn.item(), s)
        if s % 100 == 99:
            with torch.no_grad():
                logits = m(xv)
                tb.add_scalar("val/loss", nn.functional.cross_entropy(logits, yv).item(), s)
                tb.add_scalar("val/acc", (logits.argmax(1) == yv).float().mean().item(), s)
        if s % 200 == 199:
            torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sch.state_dict(), "step": s + 1}, out / f"ckpt_{s + 1}.pt")
    tb.close()


RUNS = ["plain_cyclic_lr_healthy", "plain_warm_restarts_healthy", "plain_warmup_exp_healthy"]

if __name__ == "__main__":
    made = versions("torch")
    for name in RUNS:
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name)
        record(name, made, None, [], {},
               profile={"framework": "plain", "resumed_at": None, "init_checkpoint": False})
