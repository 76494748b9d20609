"""Shared pieces of the healthy sweep: a tiny synthetic language (sparse Markov chains), a
word-level tokenizer built locally, a small nanoGPT-style GPT, LR schedules written the way
training scripts write them, and the checks every run must pass before it is recorded."""
import json
import math
import os
import shutil
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

V = 64                      # word tokens t0..t63
SPECIAL = ["<pad>", "<eos>", "<bos>"]
NS = len(SPECIAL)           # word token i has id NS + i in the HF tokenizer
VT = V + NS                 # HF vocab size (67)
LN_V = math.log(V)


# ---------------------------------------------------------------- data


def succ_table(chain=0):
    """Successor table of chain `chain`: every token has four likely successors. Chain k in
    1..99 keeps chain 0 but swaps one successor in a quarter of the rows (a nearby domain: a
    model pretrained on chain 0 starts a fine-tune on it far below ln V, then improves).
    Chains >= 100 draw successors from their own 24-word subset of the vocabulary (distinct
    sources with telling words, for classification)."""
    g = torch.Generator().manual_seed(1234)
    succ = torch.randint(0, V, (V, 4), generator=g)
    if 0 < chain < 100:
        g = torch.Generator().manual_seed(1234 + chain)
        rows = torch.randperm(V, generator=g)[: V // 4]
        succ[rows, 0] = torch.randint(0, V, (len(rows),), generator=g)
    elif chain >= 100:
        g = torch.Generator().manual_seed(1234 + chain)
        words_c = torch.randperm(V, generator=g)[:24]
        succ = words_c[torch.randint(0, 24, (V, 4), generator=g)]
    return succ


def markov(n_seq, seq_len, seed=0, chain=0, offset=0, order=1):
    """Rows of word ids 0..V-1 (+offset: pass NS for HF tokenizer ids) from chain `chain`.
    order=2: the successor set also depends on the token before (4 sets per token), which a
    small model learns over thousands of steps instead of hundreds (long runs keep improving)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.empty(n_seq, seq_len, dtype=torch.long)
    x[:, 0] = torch.randint(0, V, (n_seq,), generator=g)
    if order == 1:
        succ = succ_table(chain)
        for t in range(1, seq_len):
            pick = torch.randint(0, 4, (n_seq,), generator=g)
            x[:, t] = succ[x[:, t - 1], pick]
    else:
        g2 = torch.Generator().manual_seed(4321 + chain)
        succ = torch.randint(0, V, (V, 4, 4), generator=g2)
        x[:, 1] = torch.randint(0, V, (n_seq,), generator=g)
        for t in range(2, seq_len):
            pick = torch.randint(0, 4, (n_seq,), generator=g)
            x[:, t] = succ[x[:, t - 1], x[:, t - 2] % 4, pick]
    return x + offset


def classes(n_seq, seq_len, n_cls, seed=0, offset=0):
    """Sequence classification: the label is the chain a row was drawn from."""
    g = torch.Generator().manual_seed(seed + 77)
    y = torch.randint(0, n_cls, (n_seq,), generator=g)
    x = torch.empty(n_seq, seq_len, dtype=torch.long)
    for c in range(n_cls):
        idx = (y == c).nonzero().flatten()
        if len(idx):
            x[idx] = markov(len(idx), seq_len, seed=seed * 10 + c, chain=100 + c, offset=offset)
    return x, y


def words(row, offset=0):
    return " ".join(f"t{int(i) - offset}" for i in row)


def tokenizer():
    """A word-level fast tokenizer over t0..t63 plus <pad>/<eos>/<bos>, built here (no hub)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + [f"t{i}" for i in range(V)])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<bos>", model_max_length=64)


# ---------------------------------------------------------------- a nanoGPT-style model


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        self.n_head = c["n_head"]
        self.causal = c.get("causal", True)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.c_attn(x).split(e, dim=2)
        q, k, v = (z.view(b, t, self.n_head, e // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, e))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(c["n_embd"], c["bias"]), CausalSelfAttention(c)
        self.ln_2, self.mlp = LayerNorm(c["n_embd"], c["bias"]), MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's model with its module names (transformer.wte/wpe/h.N/ln_f, lm_head tied to
    wte), GPT-2 init (std 0.02, c_proj scaled by 1/sqrt(2 n_layer))."""

    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=LayerNorm(c["n_embd"], c["bias"]),
        ))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def hidden(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for blk in self.transformer.h:
            x = blk(x)
        return self.transformer.ln_f(x)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.hidden(idx))
        if targets is None:
            return logits
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


class GPTClassifier(nn.Module):
    """The GPT trunk (bidirectional here is not needed: last-token pooling) + a linear head."""

    def __init__(self, c, n_cls):
        super().__init__()
        self.gpt = GPT(c)
        self.head = nn.Linear(c["n_embd"], n_cls)

    def forward(self, idx, y=None):
        logits = self.head(self.gpt.hidden(idx).mean(1))
        if y is None:
            return logits
        return F.cross_entropy(logits.float(), y)


def gpt_cfg(n_embd=32, n_layer=2, n_head=2, block_size=32, bias=True):
    return dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                bias=bias, vocab_size=V, dropout=0.0)


def decay_groups(model, wd):
    """The usual split: matrices decayed, biases / norm weights / 1-d params not."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    return [{"params": decay, "weight_decay": wd}, {"params": nodecay, "weight_decay": 0.0}]


def make_optimizer(kind, model, lr, wd=0.1, betas=(0.9, 0.95)):
    if kind == "adamw":
        return torch.optim.AdamW(decay_groups(model, wd), lr=lr, betas=betas)
    if kind == "adamw_one_group":  # the stock call from the PyTorch docs / most tutorials
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True,
                               weight_decay=1e-4)
    if kind == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(model.parameters(), lr=lr, scale_parameter=False, relative_step=False,
                         warmup_init=False, weight_decay=0.0)
    raise ValueError(kind)


def lr_lambda(schedule, warmup, total, power=2.0, min_ratio=0.0):
    """Multiplier of the peak LR at optimizer step s (LambdaLR), as transformers' get_scheduler
    defines them."""

    def f(s):
        if schedule == "constant":
            return 1.0
        if s < warmup:
            return (s + 1) / max(1, warmup) if schedule != "constant_with_warmup" else s / max(1, warmup)
        if schedule == "constant_with_warmup":
            return 1.0
        r = min(1.0, (s - warmup) / max(1, total - warmup))
        if schedule == "linear":
            return max(min_ratio, 1.0 - r)
        if schedule == "cosine":
            return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * r))
        if schedule == "polynomial":
            return min_ratio + (1 - min_ratio) * (1 - r) ** power
        raise ValueError(schedule)

    return f


# ---------------------------------------------------------------- bookkeeping


def fresh_dir(path):
    path = Path(path)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def versions(*mods, extra=""):
    out = []
    for m in mods:
        try:
            mod = __import__(m)
            out.append(f"{m} {getattr(mod, '__version__', '?')}")
        except ImportError:
            pass
    s = ", ".join(out) + f", python {sys.version.split()[0]}"
    return s + (f"; {extra}" if extra else "")


def write_jsonl(path, rows, mode="w"):
    with open(path, mode) as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


class Unhealthy(AssertionError):
    pass


def check_losses(name, pts, init, phase, min_drop=0.8):
    """pts: [(step, loss)] as logged. Every run: finite, at least three points. From scratch
    (LM, SFT, classification): the mean of the last three < min_drop x first, the last
    < 0.9 x first (a single step's loss is noisy). Fine-tunes / adapters: stay low
    (last <= 1.1 x first) and, for language-model losses, start far below ln V."""
    if len(pts) < 3:
        raise Unhealthy(f"{name}: only {len(pts)} logged losses")
    for s, l in pts:
        if not math.isfinite(l):
            raise Unhealthy(f"{name}: loss {l} at step {s}")
    first, last = pts[0][1], pts[-1][1]
    # the mean of the last few points: a single noisy point should not decide
    tail = sum(l for _, l in pts[-3:]) / 3
    if phase in ("grpo",):
        return
    if phase == "dpo":
        if not tail < first:
            raise Unhealthy(f"{name}: DPO loss {first:.3f} -> {tail:.3f} did not fall")
        return
    if init == "scratch":
        if not (last < 0.9 * first and tail < min_drop * first):
            raise Unhealthy(f"{name}: loss {first:.3f} -> {last:.3f} (tail {tail:.3f}), "
                            f"not below {min_drop} x first")
    else:
        if not tail <= 1.1 * first:
            raise Unhealthy(f"{name}: fine-tune loss rose {first:.3f} -> {tail:.3f}")
        if phase in ("pretrain", "sft") and not first < 0.8 * LN_V:
            raise Unhealthy(f"{name}: fine-tune first loss {first:.3f} not far below ln V {LN_V:.3f}")


def check_interval(name, steps, interval, first_step_extra=False):
    """The logged steps are spaced by the log interval (the first may be step 0/1)."""
    steps = sorted(set(steps))
    gaps = {b - a for a, b in zip(steps[1:], steps[2:])}
    if gaps and gaps != {interval}:
        raise Unhealthy(f"{name}: logged steps spaced {sorted(gaps)}, expected {interval}")
