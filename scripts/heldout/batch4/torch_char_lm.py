"""Plain PyTorch character-level GRU language model on a synthetic corpus (template sentences
over a small lexicon).  torch.utils.tensorboard SummaryWriter (train/loss every 10 steps,
valid/loss + valid/bpc every 100 steps) plus a plain-text train.log; best/last checkpoints.
HEALTHY: loss starts at ~ln(vocab) (uniform prediction) and falls to ~0.6 nat/char.
usage: python torch_char_lm.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, math, time
import common
import numpy as np
import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(77)

rng = np.random.default_rng(77)
# pseudo-language: 400 words built from syllables, zipfian unigram + sparse "grammar" (each word has a
# preferred set of successors), sentences capitalised and punctuated
onsets = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "sh", "ch", "th", "br", "st", "pl"]
vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ee"]
codas = ["", "", "", "n", "r", "s", "l", "m", "nd", "st"]
lexicon = sorted({"".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                          for _ in range(rng.integers(1, 4))) for _ in range(400)})
W = len(lexicon)
unigram = 1.0 / np.arange(1, W + 1) ** 1.05
unigram /= unigram.sum()
succ = [rng.choice(W, size=12, replace=False, p=unigram) for _ in range(W)]


def sentence():
    w = int(rng.choice(W, p=unigram))
    words = [lexicon[w]]
    for _ in range(int(rng.integers(3, 12))):
        w = int(rng.choice(succ[w])) if rng.random() < 0.75 else int(rng.choice(W, p=unigram))
        words.append(lexicon[w])
        if rng.random() < 0.08:
            words[-1] += ","
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!"]) + (" " if rng.random() < 0.8 else "\n")


text = "".join(sentence() for _ in range(7000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n_val = len(data) // 10
train_data, val_data = data[:-n_val], data[-n_val:]
V = len(chars)

cfg = dict(vocab=V, emb=32, hidden=160, seq_len=64, batch_size=32, lr=3e-3, steps=900, eval_every=100,
           log_every=10, eval_batches=20)


class CharGRU(nn.Module):
    def __init__(self, V, emb, hidden):
        super().__init__()
        self.emb = nn.Embedding(V, emb)
        self.rnn = nn.GRU(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, V)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def get_batch(src, g):
    ix = torch.randint(len(src) - cfg["seq_len"] - 1, (cfg["batch_size"],), generator=g)
    x = torch.stack([src[i:i + cfg["seq_len"]] for i in ix])
    y = torch.stack([src[i + 1:i + 1 + cfg["seq_len"]] for i in ix])
    return x, y


model = CharGRU(V, cfg["emb"], cfg["hidden"])
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
crit = nn.CrossEntropyLoss()
gtrain = torch.Generator().manual_seed(1)
writer = SummaryWriter(log_dir=os.path.join(out, "tb"))
logf = open(os.path.join(out, "train.log"), "w")


def say(msg):
    logf.write(msg + "\n"); logf.flush()


def evaluate():
    model.eval()
    g = torch.Generator().manual_seed(999)   # same eval windows every time
    tot = 0.0
    with torch.no_grad():
        for _ in range(cfg["eval_batches"]):
            x, y = get_batch(val_data, g)
            tot += crit(model(x).reshape(-1, V), y.reshape(-1)).item()
    model.train()
    return tot / cfg["eval_batches"]


say(f"corpus: {len(text)} chars, vocab {V}, train {len(train_data)} / valid {len(val_data)}")
say(f"config: {cfg}")
best, t0, acc_loss = float("inf"), time.time(), 0.0
for step in range(1, cfg["steps"] + 1):
    x, y = get_batch(train_data, gtrain)
    loss = crit(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    acc_loss += loss.item()
    if step == 1 or step % cfg["log_every"] == 0:
        avg = acc_loss / (1 if step == 1 else cfg["log_every"])
        writer.add_scalar("train/loss", avg, step)
        say(f"step {step:5d} | train loss {avg:.4f} | {time.time() - t0:.1f}s")
        acc_loss = 0.0
    if step % cfg["eval_every"] == 0:
        vl = evaluate()
        writer.add_scalar("valid/loss", vl, step)
        writer.add_scalar("valid/bpc", vl / math.log(2), step)
        say(f"step {step:5d} | valid loss {vl:.4f} | valid bpc {vl / math.log(2):.3f}")
        if vl < best:
            best = vl
            torch.save({"step": step, "model": model.state_dict(), "chars": chars, "cfg": cfg},
                       os.path.join(out, "best.pt"))
torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(), "chars": chars, "cfg": cfg},
           os.path.join(out, "last.pt"))
say(f"done. best valid loss {best:.4f}")
writer.close()
logf.close()
