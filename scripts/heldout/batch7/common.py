"""Shared helpers for the batch7 held-out runs (seeding, small utils)."""
import json
import os
import random
import shutil

import numpy as np
import torch


def setup(seed: int = 0):
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def fresh_dir(path: str) -> str:
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    return path


def dump_json(path: str, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)


def tee_output(path: str, append: bool = False):
    """Send this process's stdout+stderr (C level too) to the console and to `path`,
    the way `python train.py 2>&1 | tee train.log` would."""
    import subprocess
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    proc = subprocess.Popen(["tee"] + (["-a"] if append else []) + [path], stdin=subprocess.PIPE,
                            stdout=sys.__stdout__)
    os.dup2(proc.stdin.fileno(), 1)
    os.dup2(proc.stdin.fileno(), 2)
    return proc
