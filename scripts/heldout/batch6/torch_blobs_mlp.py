# Plain PyTorch ReLU MLP on synthetic 10-class blobs; metrics.csv per epoch, model+optimizer state_dicts every epoch.
# usage: torch_blobs_mlp.py RUNS NAME LR
import os, sys, csv, math
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, torch.nn as nn
torch.set_num_threads(1); torch.manual_seed(0)
RUNS, NAME = sys.argv[1], sys.argv[2]
LR = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-3
out = os.path.join(RUNS, NAME); os.makedirs(f"{out}/checkpoints", exist_ok=True)
C, D = 10, 32
centers = torch.randn(C, D) * 0.45
def data(n, g):
    y = torch.randint(0, C, (n,), generator=g)
    return centers[y] + torch.randn(n, D, generator=g), y
Xtr, ytr = data(4000, torch.Generator().manual_seed(1)); Xva, yva = data(1000, torch.Generator().manual_seed(2))
model = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, C))
opt = torch.optim.Adam(model.parameters(), lr=LR)
lossf = nn.CrossEntropyLoss()
f = open(f"{out}/metrics.csv", "w", newline=""); w = csv.writer(f)
w.writerow(["epoch", "train_loss", "train_acc", "val_loss", "val_acc", "lr"])
hist = []
for ep in range(1, 16):
    model.train(); perm = torch.randperm(len(Xtr)); tl = ta = 0
    for i in range(0, len(Xtr), 64):
        idx = perm[i:i + 64]; o = model(Xtr[idx]); l = lossf(o, ytr[idx])
        opt.zero_grad(); l.backward(); opt.step()
        tl += l.item() * len(idx); ta += (o.argmax(1) == ytr[idx]).sum().item()
    model.eval()
    with torch.no_grad():
        o = model(Xva); vl = lossf(o, yva).item(); va = (o.argmax(1) == yva).float().mean().item()
    w.writerow([ep, f"{tl/len(Xtr):.5f}", f"{ta/len(Xtr):.4f}", f"{vl:.5f}", f"{va:.4f}", LR]); f.flush()
    torch.save({"epoch": ep, "model": model.state_dict(), "optimizer": opt.state_dict()}, f"{out}/checkpoints/epoch_{ep:02d}.pt")
    hist.append((tl / len(Xtr), vl, va)); print(ep, hist[-1])
print("ln C", math.log(C))
if LR <= 1e-3:
    assert hist[-1][0] < 0.5 * hist[0][0] and hist[-1][2] > 0.6, hist
