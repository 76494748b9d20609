"""Shared helpers for the held-out corpus generator: synthetic data, a local
character tokenizer, tiny model configs, and bookkeeping for answers.json.

Nothing here is downloaded: every model is built from a config, every
tokenizer is built locally, every data set is synthetic.
"""
import json
import math
import os
import platform
import random
import sys

import numpy as np
import torch

torch.set_num_threads(1)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("DISABLE_MLFLOW_INTEGRATION", "TRUE")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

ALPHABET = list("abcdefghijklmnopqrstuvwxyz .,?!0123456789")
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def versions(*mods):
    out = [f"torch {torch.__version__}"]
    for m in mods:
        mod = sys.modules.get(m) or __import__(m)
        out.append(f"{m} {getattr(mod, '__version__', '?')}")
    out.append(f"python {platform.python_version()}")
    return ", ".join(out)


# ---------------------------------------------------------------- text data
class MarkovText:
    """Order-1 character Markov chain with peaked transitions: learnable in a
    few dozen steps by a tiny model, far from uniform at init."""

    def __init__(self, seed=0, chars="abcdefghijklmnop ", peak=6.0):
        rng = np.random.default_rng(seed)
        self.chars = chars
        n = len(chars)
        logits = rng.normal(size=(n, n))
        for i in range(n):
            logits[i, rng.choice(n, 2, replace=False)] += peak
        p = np.exp(logits)
        self.P = p / p.sum(1, keepdims=True)
        self.rng = rng

    def sample(self, length):
        i = self.rng.integers(len(self.chars))
        out = [self.chars[i]]
        for _ in range(length - 1):
            i = self.rng.choice(len(self.chars), p=self.P[i])
            out.append(self.chars[i])
        return "".join(out)


def char_tokenizer(chat=False, model_max_length=128):
    """A real `tokenizers` WordLevel char tokenizer wrapped as a
    PreTrainedTokenizerFast, built locally."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + ALPHABET)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        model_max_length=model_max_length,
        additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"],
    )
    if chat:
        fast.chat_template = (
            "{% for m in messages %}"
            "{% if m['role'] == 'assistant' %}<|assistant|>{% generation %}{{ m['content'] }}</s>{% endgeneration %}"
            "{% else %}<|{{ m['role'] }}|>{{ m['content'] }}{% endif %}"
            "{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        )
    return fast


def vocab_size():
    return len(SPECIALS) + len(ALPHABET)


# ---------------------------------------------------------------- image data
def shape_images(n, size=16, classes=4, channels=3, seed=0, noise=0.3):
    """Synthetic images: class k draws a bright blob in quadrant / stripe
    pattern k, plus noise. Returns float tensor (n,C,H,W) and labels."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = torch.randn(n, channels, size, size, generator=g) * noise
    h = size // 2
    for i in range(n):
        k = int(y[i])
        if k == 0:
            x[i, :, :h, :h] += 1.0
        elif k == 1:
            x[i, :, :h, h:] += 1.0
        elif k == 2:
            x[i, :, h:, :h] += 1.0
        elif k == 3:
            x[i, :, h:, h:] += 1.0
        else:
            x[i, :, :, (k % size)::classes] += 1.0
        x[i, k % channels] += 0.3
    return x, y


def seg_images(n, size=16, seed=0):
    """Images with one bright rectangle; mask = the rectangle; box = its
    normalized (cx, cy, w, h); class = 0 if wider than tall else 1."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, size, size, generator=g) * 0.25
    m = torch.zeros(n, size, size, dtype=torch.long)
    boxes = torch.zeros(n, 4)
    cls = torch.zeros(n, dtype=torch.long)
    for i in range(n):
        w = int(torch.randint(3, size // 2 + 2, (1,), generator=g))
        hh = int(torch.randint(3, size // 2 + 2, (1,), generator=g))
        x0 = int(torch.randint(0, size - w, (1,), generator=g))
        y0 = int(torch.randint(0, size - hh, (1,), generator=g))
        x[i, 0, y0:y0 + hh, x0:x0 + w] += 1.0
        m[i, y0:y0 + hh, x0:x0 + w] = 1
        boxes[i] = torch.tensor([(x0 + w / 2) / size, (y0 + hh / 2) / size, w / size, hh / size])
        cls[i] = 0 if w >= hh else 1
    return x, m, boxes, cls


def regression_data(n, d=8, seed=0, noise=0.05, task=0):
    """Samples (x, y) of one fixed target function (chosen by `task`)."""
    w = torch.randn(d, generator=torch.Generator().manual_seed(1000 + task))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = torch.sin(x @ w / math.sqrt(d) * 2) + 0.3 * x[:, 0] * x[:, 1] + noise * torch.randn(n, generator=g)
    return x, y.unsqueeze(1)


# ---------------------------------------------------------------- bookkeeping
def entry(made_by, phase, init, framework, precision="fp32", resumed_at=None,
          init_checkpoint=False, **extra):
    prof = {
        "phase": phase,
        "init": init,
        "resumed_at": resumed_at,
        "init_checkpoint": init_checkpoint,
        "framework": framework,
        "precision": precision,
    }
    prof.update(extra)
    return {"accept": [], "facts": {}, "made_by": made_by, "bug": None, "profile": prof}


def assert_learned(name, losses, ratio=0.85):
    losses = [float(v) for v in losses if v is not None and math.isfinite(float(v))]
    assert len(losses) >= 2, f"{name}: too few losses logged ({len(losses)})"
    first, last = losses[0], losses[-1]
    assert last < first * ratio, f"{name}: did not learn: first {first:.4f} last {last:.4f}"
    return first, last


def write_partial(out_dir, family, answers):
    path = os.path.join(out_dir, f".answers_{family}.json")
    with open(path, "w") as f:
        json.dump(answers, f, indent=1, sort_keys=True)
