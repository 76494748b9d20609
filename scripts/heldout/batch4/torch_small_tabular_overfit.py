"""Plain PyTorch MLP on 160 rows of a noisy 6-class tabular problem, validated on 1000 held-out rows.
Per-epoch CSV log + best/last checkpoints.  HEALTHY: heavy overfitting of a tiny training set
(no weight decay, no dropout, wide net, 200 epochs) -> val loss bottoms early and climbs far above train.
usage: python torch_small_tabular_overfit.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, csv, json, time
import common
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(7)

cfg = dict(n_train=160, hidden=256, lr=2e-3, epochs=200, batch_size=16, seed=7)
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
x, y = make_classification(n_samples=cfg["n_train"] + 1000, n_features=24, n_informative=12, n_redundant=4,
                           n_classes=6, flip_y=0.08, class_sep=1.0, random_state=11)
x, y = x.astype("float32"), y.astype("int64")
xtr, ytr, xva, yva = x[:cfg["n_train"]], y[:cfg["n_train"]], x[cfg["n_train"]:], y[cfg["n_train"]:]
sc = StandardScaler().fit(xtr)
xtr = torch.from_numpy(sc.transform(xtr)).float()
xva = torch.from_numpy(sc.transform(xva)).float()
train_dl = DataLoader(TensorDataset(xtr, torch.from_numpy(ytr)), batch_size=cfg["batch_size"], shuffle=True)
val_dl = DataLoader(TensorDataset(xva, torch.from_numpy(yva)), batch_size=250)

model = nn.Sequential(nn.Linear(24, cfg["hidden"]), nn.ReLU(),
                      nn.Linear(cfg["hidden"], cfg["hidden"]), nn.ReLU(),
                      nn.Linear(cfg["hidden"], 6))
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
crit = nn.CrossEntropyLoss()

with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(cfg, f, indent=2)
os.makedirs(os.path.join(out, "checkpoints"))

logf = open(os.path.join(out, "metrics.csv"), "w", newline="")
w = csv.writer(logf)
w.writerow(["epoch", "train_loss", "train_acc", "val_loss", "val_acc", "time_s"])
best = 0.0
t0 = time.time()
for epoch in range(1, cfg["epochs"] + 1):
    model.train()
    tl, tc, tn = 0.0, 0, 0
    for xb, yb in train_dl:
        opt.zero_grad()
        logits = model(xb)
        loss = crit(logits, yb)
        loss.backward()
        opt.step()
        tl += loss.item() * len(yb); tc += (logits.argmax(1) == yb).sum().item(); tn += len(yb)
    model.eval()
    vl, vc, vn = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in val_dl:
            logits = model(xb)
            vl += crit(logits, yb).item() * len(yb); vc += (logits.argmax(1) == yb).sum().item(); vn += len(yb)
    row = [epoch, tl / tn, tc / tn, vl / vn, vc / vn, round(time.time() - t0, 2)]
    w.writerow([f"{v:.6f}" if isinstance(v, float) else v for v in row]); logf.flush()
    if vc / vn > best:
        best = vc / vn
        torch.save({"epoch": epoch, "model": model.state_dict(), "val_acc": best},
                   os.path.join(out, "checkpoints", "best.pt"))
    if epoch % 10 == 0:
        print(f"epoch {epoch} train_loss {tl/tn:.4f} val_loss {vl/vn:.4f} val_acc {vc/vn:.3f}")
torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict()},
           os.path.join(out, "checkpoints", "last.pt"))
logf.close()
