# Tiny transformer encoder classifier, AdamW with decay/no-decay param groups,
# linear warmup + cosine schedule, TensorBoard logging (val logged at 1-based epoch).
import argparse, math, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.tensorboard import SummaryWriter

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--wd", type=float, default=0.01)
p.add_argument("--warmup", type=int, default=100)
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)

V, L, C = 24, 32, 4
def make(n, g):
    x = torch.randint(5, V, (n, L), generator=g)
    # sprinkle the "marker" tokens 1..4; label = most frequent marker
    counts = torch.randint(0, 6, (n, C), generator=g)
    ys = []
    for i in range(n):
        pos = torch.randperm(L, generator=g)
        k = 0
        for c in range(C):
            m = int(counts[i, c]); x[i, pos[k:k + m]] = c + 1; k += m
        ys.append(int(counts[i].argmax()))
    return x, torch.tensor(ys)

g = torch.Generator().manual_seed(3)
xtr, ytr = make(3000, g)
xva, yva = make(600, g)
tl = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True)
vl = DataLoader(TensorDataset(xva, yva), batch_size=200)

class TinyEncoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.pos = nn.Parameter(torch.zeros(1, L, d))
        layer = nn.TransformerEncoderLayer(d, heads, 128, dropout=0.1, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, C)
    def forward(self, x):
        h = self.enc(self.emb(x) + self.pos)
        return self.head(self.ln(h).mean(1))

model = TinyEncoder()
decay, no_decay = [], []
for n_, p_ in model.named_parameters():
    if p_.ndim < 2 or "ln" in n_ or "norm" in n_ or n_.endswith(".bias") or n_ == "pos":
        no_decay.append(p_)
    else:
        decay.append(p_)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                         {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.98))
total = args.epochs * len(tl)
def lr_lambda(s):
    if s < args.warmup:
        return (s + 1) / args.warmup
    return 0.5 * (1 + math.cos(math.pi * (s - args.warmup) / max(1, total - args.warmup)))
sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)

os.makedirs(args.out, exist_ok=True)
writer = SummaryWriter(os.path.join(args.out, "runs"))
it = 0
for epoch in range(1, args.epochs + 1):
    model.train()
    for xb, yb in tl:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        writer.add_scalar("train/loss", loss.item(), it)
        writer.add_scalar("train/lr", sched.get_last_lr()[0], it)
        it += 1
    model.eval(); vs, vc, vn = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in vl:
            o = model(xb); vs += F.cross_entropy(o, yb, reduction="sum").item()
            vc += (o.argmax(-1) == yb).sum().item(); vn += len(yb)
    writer.add_scalar("val/loss", vs / vn, epoch)
    writer.add_scalar("val/accuracy", vc / vn, epoch)
    print(f"[{epoch}/{args.epochs}] val_loss={vs/vn:.4f} val_acc={vc/vn:.3f}", flush=True)
    if epoch % 3 == 0 or epoch == args.epochs:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch},
                   os.path.join(args.out, f"ckpt_epoch{epoch}.pt"))
writer.close()
