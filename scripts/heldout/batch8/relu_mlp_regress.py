# Plain PyTorch ReLU MLP regression with Adam; checkpoints (model + optimizer) at epochs 4 and 9,
# metrics.jsonl per 10 steps and per-epoch summary.
import os, sys, json, torch
torch.set_num_threads(1)
out = sys.argv[1]; os.makedirs(os.path.join(out, "checkpoints"), exist_ok=True)
torch.manual_seed(0)
cfg = {"lr": float(os.environ.get("LR", 0.05)), "betas": [0.9, 0.999], "batch_size": 64, "epochs": 10, "hidden": 256, "depth": 3,
       "optimizer": "Adam", "loss": "mse"}
g = torch.Generator().manual_seed(0)
X = torch.randn(4000, 10, generator=g); Y = (X[:, :3] ** 2).sum(1, keepdim=True) - X[:, 3:4] * 2 + 0.1 * torch.randn(4000, 1, generator=g)
Xv, Yv = X[3200:], Y[3200:]; X, Y = X[:3200], Y[:3200]
layers = []; d = 10
for _ in range(cfg["depth"]):
    layers += [torch.nn.Linear(d, cfg["hidden"]), torch.nn.ReLU()]; d = cfg["hidden"]
model = torch.nn.Sequential(*layers, torch.nn.Linear(d, 1))
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=tuple(cfg["betas"]))
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
log = open(os.path.join(out, "metrics.jsonl"), "w")
step = 0
for ep in range(cfg["epochs"]):
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(ep))
    for i in range(0, len(X), cfg["batch_size"]):
        idx = perm[i:i + cfg["batch_size"]]
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step(); step += 1
        if step % 10 == 0:
            log.write(json.dumps({"step": step, "epoch": ep, "train_loss": round(loss.item(), 5),
                                  "grad_norm": round(gn.item(), 6), "lr": cfg["lr"]}) + "\n")
    with torch.no_grad(): vl = torch.nn.functional.mse_loss(model(Xv), Yv).item()
    log.write(json.dumps({"step": step, "epoch": ep, "val_loss": round(vl, 5)}) + "\n"); log.flush()
    print(f"epoch {ep} train {loss.item():.4f} val {vl:.4f} gn {gn.item():.2e}")
    if ep % 5 == 4:
        torch.save({"epoch": ep, "step": step, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": opt.state_dict(), "config": cfg},
                   os.path.join(out, "checkpoints", f"epoch_{ep:03d}.pt"))
