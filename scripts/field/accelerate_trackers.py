"""accelerate runs: a small CNN classifier on synthetic 8x8 images, accelerator.save_state
every 150 steps (model.safetensors, optimizer.bin, scheduler.bin, random_states_0.pkl) and
metrics through accelerate's trackers: wandb in offline mode (wandb/offline-run-*/) or an
MLflow file store (mlruns/)."""
import math
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator

from common import record, run_dir, versions

C = 10


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, C, (n,), generator=g)
    proto = torch.randn(C, 3, 8, 8, generator=torch.Generator().manual_seed(99))
    x = proto[y] + 1.5 * torch.randn(n, 3, 8, 8, generator=g)
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, C)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(x.mean((2, 3)))


def train(name, tracker, lr=3e-3, steps=300, sched_step=True, decay_split=True):
    out = run_dir(name)
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    os.environ["WANDB_DIR"] = str(out)
    torch.manual_seed(0)
    if tracker == "mlflow":
        # MLflow 3.x defaults to sqlite and refuses ./mlruns unless asked; older MLflow and
        # many existing runs use the file store, which is what this corpus records
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        os.environ["MLFLOW_TRACKING_URI"] = (out / "mlruns").as_uri()
    acc = Accelerator(log_with=tracker, project_dir=str(out), cpu=True)
    cfg = {"lr": lr, "max_steps": steps, "warmup_steps": 30, "schedule": "warmup_cosine",
           "weight_decay": 0.05, "batch_size": 32}
    acc.init_trackers("tiny-cnn", config=cfg)
    model = Net()
    if decay_split:
        decay = [p for n, p in model.named_parameters() if p.dim() > 1]
        nodecay = [p for n, p in model.named_parameters() if p.dim() <= 1]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                 {"params": nodecay, "weight_decay": 0.0}], lr=lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)

    def lam(s):
        if s < 30:
            return (s + 1) / 30
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (s - 30) / (steps - 30))))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lam)
    x, y = data(32 * steps, 1)
    xv, yv = data(256, 2)
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32,
                                     shuffle=True)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    step = 0
    for xb, yb in dl:
        model.train()
        loss = F.cross_entropy(model(xb), yb)
        acc.backward(loss)
        gn = acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if sched_step:
            sched.step()
        opt.zero_grad()
        step += 1
        if step % 5 == 0:
            logs = {"train/loss": loss.item(), "train/grad_norm": float(gn),
                    "train/learning_rate": sched.get_last_lr()[0]}
            if step % 50 == 0:
                model.eval()
                with torch.no_grad():
                    logs["eval/loss"] = F.cross_entropy(model(xv), yv).item()
            acc.log(logs, step=step)
        if step % 150 == 0:
            acc.save_state(str(out / f"checkpoint-{step}"))
        if step >= steps:
            break
    acc.end_training()


RUNS = {
    "accel_wandb_healthy": (dict(tracker="wandb"), None, [], {}),
    "accel_wandb_sched_never_stepped": (
        dict(tracker="wandb", sched_step=False),
        "lr_scheduler.step() missing from the loop: LR stays at the first warmup value",
        ["S2.1", "O8", "O23", "S2.2"],
        {"schedule": "warmup_cosine", "warmup_steps": "30", "lr_max": "0.003"}),
    "accel_wandb_lr_100x": (dict(tracker="wandb", lr=0.3),
                            "learning_rate 0.3, 100x the healthy 3e-3",
                            ["S3.1", "S3.2", "S4.1", "S1.2", "O22"], {"lr_max": "0.003"}),
    "accel_mlflow_healthy": (dict(tracker="mlflow"), None, [], {}),
    "accel_mlflow_no_decay_split": (
        dict(tracker="mlflow", decay_split=False),
        "AdamW(model.parameters(), weight_decay=0.05): biases and BatchNorm weights decayed",
        ["S6.1", "O6"], {}),
    "accel_mlflow_sched_never_stepped": (
        dict(tracker="mlflow", sched_step=False),
        "lr_scheduler.step() missing from the loop: LR stays at the first warmup value",
        ["S2.1", "O8", "O23", "S2.2"],
        {"schedule": "warmup_cosine", "warmup_steps": "30", "lr_max": "0.003"}),
}

if __name__ == "__main__":
    want = sys.argv[1:] or list(RUNS)
    if len(want) > 1:  # wandb keeps its settings per process: one process per run
        for name in want:
            subprocess.run([sys.executable, __file__, name], check=True)
        sys.exit(0)
    for name, (kw, bug, accept, facts) in RUNS.items():
        if name not in want:
            continue
        train(name, **kw)
        made = versions("torch", "accelerate", "wandb" if kw["tracker"] == "wandb" else "mlflow")
        record(name, made, bug, accept, facts)
