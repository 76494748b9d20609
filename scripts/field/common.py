"""Shared helpers for the field-corpus scripts: output folder, a tiny synthetic language,
and the answer file (tests/field/answers.json) that each script adds its runs to."""
import json
import math
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("FIELD_OUT", REPO / "tests" / "field"))
VOCAB = 64

try:  # the machine is shared: one thread keeps tiny runs fast and polite
    import torch as _t

    _t.set_num_threads(1)
except ImportError:
    pass


def run_dir(name):
    """A fresh, empty folder for one run."""
    d = OUT / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def versions(*mods):
    """'torch 2.15.0, lightning 2.6.6' for the modules named."""
    out = []
    for m in mods:
        try:
            mod = __import__(m)
            out.append(f"{m} {getattr(mod, '__version__', '?')}")
        except ImportError:
            pass
    return ", ".join(out) + f", python {sys.version.split()[0]}"


def markov(n_seq, seq_len, vocab=VOCAB, seed=0):
    """Token rows drawn from a fixed sparse Markov chain: each token has four likely
    successors, so a model can get well below ln V (about ln 4 at best)."""
    import torch

    g = torch.Generator().manual_seed(1234)
    succ = torch.randint(0, vocab, (vocab, 4), generator=g)
    g = torch.Generator().manual_seed(seed)
    x = torch.empty(n_seq, seq_len, dtype=torch.long)
    x[:, 0] = torch.randint(0, vocab, (n_seq,), generator=g)
    for t in range(1, seq_len):
        pick = torch.randint(0, 4, (n_seq,), generator=g)
        x[:, t] = succ[x[:, t - 1], pick]
    return x


def record(name, made_by, bug, accept, facts=None, profile=None):
    """Add or replace one run in answers.json (same shape as the shared fixtures' file,
    plus made_by, bug and profile {framework, resumed_at, init_checkpoint}). Without a
    profile, the one already recorded for the run is kept."""
    path = OUT / "answers.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    if profile is None:
        profile = data.get(name, {}).get("profile")
    data[name] = {
        "accept": list(accept),
        "facts": {k: str(v) for k, v in (facts or {}).items()},
        "made_by": made_by,
        "bug": bug,
    }
    if profile is not None:
        data[name]["profile"] = profile
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")


def cosine_warmup(step, warmup, total, lr_max, lr_min=0.0):
    if step < warmup:
        return lr_max * (step + 1) / warmup
    r = min(1.0, (step - warmup) / max(1, total - warmup))
    return lr_min + 0.5 * (1 + math.cos(math.pi * r)) * (lr_max - lr_min)
