"""Bugs that hide in plain sight (issue 27), each beside a healthy twin made by the same code:
art_lm_diverge_recovers (S4.1)   a character LM at lr 0.3: the loss multiplies within a few
                                 iterations, then parks near the unigram entropy
art_lm_lr_ok                     the same loop at lr 3e-3
art_accum_undivided (O9, S6.3)   8 micro-batches summed without dividing the loss: the pre-clip
                                 grad norm sits at several times max_grad_norm on every step
art_accum_divided                the same loop dividing the loss by 8
art_multilabel_bce_nan (O13)     a multi-label classifier with sigmoid + BCELoss at a high LR:
                                 the sigmoid saturates, BCELoss's clamped log(0) gradient is
                                 inf * 0, and the weights and loss turn NaN
art_multilabel_logits            the same model with BCEWithLogitsLoss at a sane LR
Each run logs like a plain loop: `train.log` (stdout lines) or `metrics.jsonl`, its config in
`args.yaml`, and safetensors checkpoints. Writes under tests/bugs/art/<run>/ and merges
tests/bugs/art/answers.json.
Usage: /work/venv-field/bin/python scripts/bugs/art_issue27.py [run ...]
"""
import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "bugs", "art")


def fresh(name):
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return out


def save(out, step, model):
    d = os.path.join(out, f"checkpoint-{step}")
    os.makedirs(d)
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()},
              os.path.join(d, "model.safetensors"))


def args_yaml(out, **kw):
    with open(os.path.join(out, "args.yaml"), "w") as f:
        for k, v in kw.items():
            f.write(f"{k}: {v}\n")


# ---- a character language model --------------------------------------------------------------
TEXT = ("the quick brown fox jumps over the lazy dog. " * 40 +
        "pack my box with five dozen liquor jugs. " * 30 +
        "how vexingly quick daft zebras jump! " * 30)


class CharLM(torch.nn.Module):
    def __init__(self, vocab, d=64, ctx=32):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(ctx, d)
        layer = torch.nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.block = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), 1))

    def forward(self, x):
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t))
        return self.head(self.block(h, mask=self.mask[:t, :t]))


def char_lm(name, lr):
    out = fresh(name)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT])
    counts = torch.bincount(data, minlength=len(chars)).double()
    p = counts / counts.sum()
    unigram = float(-(p[p > 0] * p[p > 0].log()).sum())
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = CharLM(len(chars))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    args_yaml(out, learning_rate=lr, max_iters=400, batch_size=16, block_size=32,
              vocab_size=len(chars), init_from="scratch")
    lines = []
    save(out, 0, model)
    for it in range(0, 401):
        ix = torch.randint(0, len(data) - 33, (16,), generator=g)
        x = torch.stack([data[i:i + 32] for i in ix])
        y = torch.stack([data[i + 1:i + 33] for i in ix])
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 2 == 0:
            lines.append(f"iter {it}: loss {loss.item():.4f}, time 10.00ms")
        if it in (200, 400):
            save(out, it, model)
    with open(os.path.join(out, "train.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return unigram, lines


# ---- gradient accumulation ----------------------------------------------------------------------
def accumulation(name, divide):
    out = fresh(name)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4096, 32, generator=g)
    w = torch.randn(32, 10, generator=g)
    y = (x @ w).argmax(1)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    k, clip = 8, 1.0
    args_yaml(out, learning_rate=1e-3, gradient_accumulation_steps=k, max_grad_norm=clip,
              per_device_batch_size=16, max_steps=300, num_labels=10)
    logs = []
    save(out, 0, model)
    for step in range(1, 301):
        opt.zero_grad()
        total = 0.0
        for _ in range(k):
            i = torch.randint(0, 4096, (16,), generator=g)
            loss = torch.nn.functional.cross_entropy(model(x[i]), y[i])
            (loss / k if divide else loss).backward()
            total += loss.item() / k
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if step % 5 == 0:
            logs.append({"step": step, "loss": round(total, 5), "grad_norm": round(float(gn), 5),
                         "learning_rate": 1e-3})
        if step in (150, 300):
            save(out, step, model)
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in logs)
    return logs


# ---- multi-label with sigmoid + BCELoss -------------------------------------------------------
def multilabel(name, logits_loss):
    out = fresh(name)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2048, 24, generator=g)
    y = (x[:, :6] > 0.3).float()
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(24, 64), torch.nn.ReLU(), torch.nn.Linear(64, 6))
    lr = 0.01 if logits_loss else 3.0
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    args_yaml(out, learning_rate=lr, batch_size=64, max_steps=300, num_labels=6,
              problem_type="multi_label_classification")
    logs = []
    save(out, 0, model)
    for step in range(1, 301):
        i = torch.randint(0, 2048, (64,), generator=g)
        z = model(x[i])
        if logits_loss:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y[i])
        else:
            loss = torch.nn.functional.binary_cross_entropy(torch.sigmoid(z), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            logs.append({"step": step, "loss": loss.item(), "learning_rate": lr})
        if step in (150, 300):
            save(out, step, model)
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(r).replace("NaN", "NaN") + "\n" for r in logs))
    return logs


def record(name, bug, accept, facts=None):
    path = os.path.join(ROOT, "answers.json")
    data = json.load(open(path)) if os.path.exists(path) else {}
    data[name] = {"accept": accept, "facts": facts or {}, "made_by": f"torch {torch.__version__}",
                  "bug": bug, "profile": {"framework": "plain", "resumed_at": None,
                                          "init_checkpoint": True}}
    with open(path, "w") as f:
        f.write(json.dumps(dict(sorted(data.items())), indent=2) + "\n")


def main(only):
    want = lambda n: not only or n in only
    if want("art_lm_diverge_recovers"):
        uni, lines = char_lm("art_lm_diverge_recovers", 0.3)
        print("diverge:", lines[:4], lines[-1], "unigram", round(uni, 3))
        record("art_lm_diverge_recovers",
               f"AdamW lr=0.3 on a character LM (3e-3 trains): the loss multiplies within a few "
               f"iterations, then parks near the unigram entropy {uni:.2f} nats", ["S4.1", "L6", "S3.2"])
    if want("art_lm_lr_ok"):
        uni, lines = char_lm("art_lm_lr_ok", 3e-3)
        print("ok:", lines[:2], lines[-1])
        record("art_lm_lr_ok", None, [])
    if want("art_accum_undivided"):
        logs = accumulation("art_accum_undivided", divide=False)
        print("undivided:", logs[0], logs[-1])
        record("art_accum_undivided",
               "gradient accumulation over 8 micro-batches without dividing the loss by 8, "
               "max_grad_norm 1.0: the pre-clip grad norm sits at several times the clip",
               ["O9", "S6.3"])
    if want("art_accum_divided"):
        logs = accumulation("art_accum_divided", divide=True)
        print("divided:", logs[0], logs[-1])
        record("art_accum_divided", None, [])
    if want("art_multilabel_bce_nan"):
        logs = multilabel("art_multilabel_bce_nan", logits_loss=False)
        print("bce:", logs[:3], logs[-1])
        record("art_multilabel_bce_nan",
               "multi-label head with torch.sigmoid + BCELoss at SGD lr 3.0: the sigmoid saturates, "
               "the clamped log(0) gradient is inf x 0 = NaN, and the weights and loss turn NaN",
               ["O13"])
    if want("art_multilabel_logits"):
        logs = multilabel("art_multilabel_logits", logits_loss=True)
        print("logits:", logs[0], logs[-1])
        record("art_multilabel_logits", None, [])


if __name__ == "__main__":
    main(sys.argv[1:])
