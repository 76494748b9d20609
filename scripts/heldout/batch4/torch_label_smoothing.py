"""Plain PyTorch MLP, 10-class tabular problem, trained with CrossEntropyLoss(label_smoothing=0.2)
(timm-style: smoothed loss for training, plain cross-entropy for evaluation).  JSONL log: a train
record every 10 steps, an eval record every 100 steps; checkpoint every 500 steps.
HEALTHY: train loss stays above val loss (smoothed targets put a floor of ~0.87 nats under the
train loss; the eval loss has no such floor).
usage: python torch_label_smoothing.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, json, time, math
import common
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(1234)

args = dict(epochs=12, batch_size=64, lr=3e-3, weight_decay=0.05, label_smoothing=0.2, eval_every=100,
            save_every=500, log_every=10, hidden=256)
xtr, xva, ytr, yva = common.tabular(n=10000, n_features=32, n_informative=16, n_classes=10, seed=21,
                                    class_sep=1.5, test_size=0.2)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")
train_dl = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)), batch_size=args["batch_size"],
                      shuffle=True, drop_last=True)
val_dl = DataLoader(TensorDataset(torch.from_numpy(xva), torch.from_numpy(yva)), batch_size=500)

model = nn.Sequential(nn.Linear(32, args["hidden"]), nn.GELU(), nn.LayerNorm(args["hidden"]),
                      nn.Linear(args["hidden"], args["hidden"]), nn.GELU(), nn.LayerNorm(args["hidden"]),
                      nn.Linear(args["hidden"], 10))
opt = torch.optim.AdamW(model.parameters(), lr=args["lr"], weight_decay=args["weight_decay"])
total = args["epochs"] * len(train_dl)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * s / total)))
train_crit = nn.CrossEntropyLoss(label_smoothing=args["label_smoothing"])
eval_crit = nn.CrossEntropyLoss()

with open(os.path.join(out, "args.json"), "w") as f:
    json.dump(args, f, indent=1)
os.makedirs(os.path.join(out, "ckpt"))
log = open(os.path.join(out, "log.jsonl"), "w")


def evaluate():
    model.eval()
    tot, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in val_dl:
            logits = model(xb)
            tot += eval_crit(logits, yb).item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            n += len(yb)
    model.train()
    return tot / n, correct / n


step, t0 = 0, time.time()
run_loss, run_acc, run_n = 0.0, 0.0, 0
for epoch in range(args["epochs"]):
    model.train()
    for xb, yb in train_dl:
        logits = model(xb)
        loss = train_crit(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step(); sched.step(); step += 1
        run_loss += loss.item(); run_acc += (logits.argmax(1) == yb).float().mean().item(); run_n += 1
        if step % args["log_every"] == 0:
            log.write(json.dumps({"step": step, "epoch": round(step / len(train_dl), 3),
                                  "train_loss": round(run_loss / run_n, 5), "train_acc": round(run_acc / run_n, 4),
                                  "lr": sched.get_last_lr()[0], "time": round(time.time() - t0, 2)}) + "\n")
            run_loss, run_acc, run_n = 0.0, 0.0, 0
        if step % args["eval_every"] == 0:
            vl, va = evaluate()
            log.write(json.dumps({"step": step, "epoch": round(step / len(train_dl), 3),
                                  "eval_loss": round(vl, 5), "eval_acc": round(va, 4)}) + "\n")
            log.flush()
        if step % args["save_every"] == 0:
            torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()},
                       os.path.join(out, "ckpt", f"step_{step:06d}.pt"))
if step % args["eval_every"] != 0:
    vl, va = evaluate()
    log.write(json.dumps({"step": step, "epoch": args["epochs"], "eval_loss": round(vl, 5), "eval_acc": round(va, 4)}) + "\n")
log.close()
torch.save(model.state_dict(), os.path.join(out, "final_model.pt"))
