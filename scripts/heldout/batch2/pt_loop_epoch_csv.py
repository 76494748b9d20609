# Plain PyTorch loop on synthetic 12x12 uint8 "scanned digit" images; inputs scaled to [0,1].
# Writes one CSV row per epoch (train_log.csv). No per-batch logging.
# --val-raw-pixels: BUG twin, the /255 scaling is only applied to the training set
#                   (validation tensors stay in 0..255).
import argparse, csv, os, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--epochs", type=int, default=20)
ap.add_argument("--val-raw-pixels", action="store_true")
args = ap.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)

K, S = 10, 12
base = rng.random((S, S)) * 120 + 40
proto = base + 14 * rng.normal(size=(K, S, S))
def make(n):
    y = rng.integers(0, K, n)
    img = proto[y] * rng.uniform(0.6, 1.0, (n, 1, 1)) + rng.normal(0, 50, (n, S, S))
    return np.clip(img, 0, 255).astype(np.uint8), y
Xtr, ytr = make(6000)
Xva, yva = make(1500)

def to_tensor(X, scale=True):
    t = torch.tensor(X, dtype=torch.float32).reshape(len(X), -1)
    return t / 255.0 if scale else t
xtr = to_tensor(Xtr)
xva = to_tensor(Xva, scale=not args.val_raw_pixels)
ytr_t, yva_t = torch.tensor(ytr), torch.tensor(yva)

model = nn.Sequential(nn.Linear(S * S, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, K))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
os.makedirs(args.out, exist_ok=True)
f = open(os.path.join(args.out, "train_log.csv"), "w", newline="")
w = csv.writer(f)
w.writerow(["epoch", "train_loss", "train_acc", "val_loss", "val_acc", "lr", "time_s"])
bs = 100
for epoch in range(1, args.epochs + 1):
    t0 = time.time()
    model.train()
    perm = torch.randperm(len(xtr))
    tl, tc = 0.0, 0
    for i in range(0, len(xtr), bs):
        idx = perm[i:i + bs]
        out = model(xtr[idx]); loss = F.cross_entropy(out, ytr_t[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        tl += loss.item() * len(idx); tc += (out.argmax(1) == ytr_t[idx]).sum().item()
    lr = opt.param_groups[0]["lr"]
    sched.step()
    model.eval()
    with torch.no_grad():
        vo = model(xva)
        vl = F.cross_entropy(vo, yva_t).item(); va = (vo.argmax(1) == yva_t).float().mean().item()
    w.writerow([epoch, f"{tl/len(xtr):.5f}", f"{tc/len(xtr):.4f}", f"{vl:.5f}", f"{va:.4f}", f"{lr:.6f}",
                f"{time.time()-t0:.2f}"])
    f.flush()
    print(f"epoch {epoch:2d} | train {tl/len(xtr):.4f} acc {tc/len(xtr):.3f} | val {vl:.4f} acc {va:.3f}")
f.close()
torch.save(model.state_dict(), os.path.join(args.out, "model_final.pt"))
