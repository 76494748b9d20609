#!/usr/bin/env python3
"""A run with a large AdamW optimizer.pt (fp32 moments) for the optimizer benchmark row.

    make_big_optimizer.py OUT [LAYERS] [DIM]     (default 36 × 3200: ~2.95 GB optimizer.pt)

OUT/checkpoint-100/ gets optimizer.pt (torch.save of an AdamW state_dict: step, exp_avg,
exp_avg_sq per Linear weight and bias, two param groups), model.safetensors (bf16) and
trainer_state.json. Needs torch and safetensors.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 36
dim = int(sys.argv[3]) if len(sys.argv) > 3 else 3200
ck = os.path.join(out, "checkpoint-100")
os.makedirs(ck, exist_ok=True)
g = torch.Generator().manual_seed(0)
params, names = [], []
for i in range(layers):
    params.append(torch.nn.Parameter(torch.empty(dim, dim)))
    names.append(f"layers.{i}.weight")
    params.append(torch.nn.Parameter(torch.empty(dim)))
    names.append(f"layers.{i}.bias")
decay = [p for p in params if p.dim() == 2]
nodecay = [p for p in params if p.dim() == 1]
opt = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}], lr=3e-4
)
for p in decay + nodecay:
    opt.state[p] = {
        "step": torch.tensor(100.0),
        "exp_avg": torch.randn(p.shape, generator=g) * 1e-3,
        "exp_avg_sq": torch.rand(p.shape, generator=g) * 1e-6,
    }
torch.save(opt.state_dict(), os.path.join(ck, "optimizer.pt"))
del opt
w = {n: (torch.randn(p.shape, generator=g) * 0.02).to(torch.bfloat16) for n, p in zip(names, params)}
save_file(w, os.path.join(ck, "model.safetensors"))
with open(os.path.join(ck, "trainer_state.json"), "w") as f:
    json.dump({"global_step": 100, "log_history": [{"step": s, "loss": 3.0 - s / 100} for s in range(10, 101, 10)]}, f)
