# Char-level GRU language model on text sampled from a random 2nd-order Markov source.
# Plain PyTorch, Adam, per-batch train loss + LR to TensorBoard, val loss/ppl per epoch (1-based).
import argparse, math, os
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.tensorboard import SummaryWriter

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--steps-per-epoch", type=int, default=100)
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)

V = 24
g = torch.Generator().manual_seed(11)
logits = torch.randn(V, V, V, generator=g) * 2.0
probs = logits.softmax(-1)
cdf = probs.cumsum(-1).numpy()
def sample(n, seed):
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    s = [0, 1]
    for i in range(n):
        s.append(min(int(np.searchsorted(cdf[s[-2], s[-1]], u[i])), V - 1))
    return torch.tensor(s)
train_text = sample(400000, 1)
val_text = sample(8000, 2)

T, B = 64, 32
def batch(text):
    ix = torch.randint(0, len(text) - T - 1, (B,))
    return torch.stack([text[i:i + T] for i in ix]), torch.stack([text[i + 1:i + T + 1] for i in ix])

class CharGRU(nn.Module):
    def __init__(self, d=32, h=128):
        super().__init__()
        self.emb = nn.Embedding(V, d); self.rnn = nn.GRU(d, h, num_layers=2, batch_first=True)
        self.out = nn.Linear(h, V)
    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])

model = CharGRU()
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
os.makedirs(args.out, exist_ok=True)
w = SummaryWriter(os.path.join(args.out, "logs"))
step = 0
for epoch in range(1, args.epochs + 1):
    model.train()
    for _ in range(args.steps_per_epoch):
        x, y = batch(train_text)
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        w.add_scalar("loss/train", loss.item(), step)
        w.add_scalar("lr", opt.param_groups[0]["lr"], step)
        step += 1
    model.eval()
    with torch.no_grad():
        xs = val_text[:-1][: (len(val_text) - 1) // T * T].view(-1, T)
        ys = val_text[1:][: (len(val_text) - 1) // T * T].view(-1, T)
        vl = F.cross_entropy(model(xs).reshape(-1, V), ys.reshape(-1)).item()
    w.add_scalar("loss/val", vl, epoch)
    w.add_scalar("ppl/val", math.exp(vl), epoch)
    print(f"epoch {epoch} step {step} val_loss {vl:.4f} ppl {math.exp(vl):.2f}", flush=True)
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": args.epochs},
           os.path.join(args.out, f"ckpt_epoch{args.epochs}.pt"))
w.close()
