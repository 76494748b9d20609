"""Plain PyTorch MLP with dropout p=0.5 after every hidden layer, 8-class tabular problem; one text
log line per epoch (print-style), best checkpoint by val loss + final weights.
BUG: evaluate() wraps the forward pass in torch.no_grad() but never calls model.eval(), so the
validation pass runs with dropout (p=0.5) active.
usage: python torch_mlp_dropout_eval.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, time
import common
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(55)

xtr, xva, ytr, yva = common.tabular(n=6000, n_features=24, n_informative=14, n_classes=8, seed=13,
                                    class_sep=1.4, test_size=0.25)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)), batch_size=128, shuffle=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva), torch.from_numpy(yva)), batch_size=512)


class MLP(nn.Module):
    def __init__(self, d_in, n_out, hidden=(256, 256, 128), p=0.5):
        super().__init__()
        layers, d = [], d_in
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), nn.Dropout(p)]
            d = h
        layers.append(nn.Linear(d, n_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader, crit):
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in loader:
            logits = model(xb)
            total += crit(logits, yb).item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            n += len(yb)
    return total / n, correct / n


model = MLP(24, 8)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
crit = nn.CrossEntropyLoss()
EPOCHS = 40
log = open(os.path.join(out, "train_log.txt"), "w")
log.write(f"model: {model}\noptimizer: Adam lr=1e-3, batch 128, epochs {EPOCHS}\n")
log.write(f"train samples {len(xtr)}, val samples {len(xva)}\n")
best = float("inf")
for epoch in range(1, EPOCHS + 1):
    t0 = time.time()
    model.train()
    tl, tc, tn = 0.0, 0, 0
    for xb, yb in train_dl:
        logits = model(xb)
        loss = crit(logits, yb)
        opt.zero_grad(); loss.backward(); opt.step()
        tl += loss.item() * len(yb); tc += (logits.argmax(1) == yb).sum().item(); tn += len(yb)
    vl, va = evaluate(model, val_dl, crit)
    log.write(f"Epoch {epoch:02d}/{EPOCHS} | train_loss {tl / tn:.4f} train_acc {tc / tn:.4f} | "
              f"val_loss {vl:.4f} val_acc {va:.4f} | {time.time() - t0:.2f}s\n")
    log.flush()
    if vl < best:
        best = vl
        torch.save(model.state_dict(), os.path.join(out, "best_model.pt"))
        log.write(f"  -> saved best_model.pt (val_loss {vl:.4f})\n")
torch.save(model.state_dict(), os.path.join(out, "final_model.pt"))
log.write("finished\n")
log.close()
