"""Anchor for DESIGN.md §6: per-tensor mean/std/min/max/absmax/zeros/non-finite with torch +
safetensors over one checkpoint, the way a user would script it. Prints seconds and peak RSS."""
import resource, sys, time

import torch
from safetensors import safe_open

path = sys.argv[1]
t = time.perf_counter()
with safe_open(path, framework="pt") as f:
    for name in f.keys():
        x = f.get_tensor(name).float()
        fin = torch.isfinite(x)
        v = x[fin]
        _ = (v.mean().item(), v.std().item(), v.min().item(), v.max().item(), v.abs().max().item(),
             (x == 0).sum().item(), torch.isnan(x).sum().item(), torch.isinf(x).sum().item())
secs = time.perf_counter() - t
print(f"torch_seconds {secs:.3f}")
print(f"torch_peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
