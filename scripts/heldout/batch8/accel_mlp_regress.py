# Healthy: accelerate, ProjectConfiguration(automatic_checkpoint_naming=True), save_state() x3,
# AdamW + linear warmup/decay scheduler, TensorBoard tracker.
import os, sys, torch, numpy as np
torch.set_num_threads(1)
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration, set_seed
from transformers import get_linear_schedule_with_warmup
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
set_seed(0)
acc = Accelerator(cpu=True, log_with="tensorboard",
                  project_config=ProjectConfiguration(project_dir=out, logging_dir=os.path.join(out, "logs"),
                                                      automatic_checkpoint_naming=True, total_limit=5))
g = torch.Generator().manual_seed(0)
X = torch.randn(4096, 16, generator=g); w = torch.randn(16, 1, generator=g)
Y = torch.sin(X @ w) + 0.1 * X[:, :1] ** 2 + 0.05 * torch.randn(4096, 1, generator=g)
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64, shuffle=True,
                                 generator=torch.Generator().manual_seed(1))
model = torch.nn.Sequential(torch.nn.Linear(16, 128), torch.nn.GELU(), torch.nn.Linear(128, 128),
                            torch.nn.GELU(), torch.nn.Linear(128, 1))
epochs = 6; total = epochs * len(dl)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
sched = get_linear_schedule_with_warmup(opt, 30, total)
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
acc.init_trackers("mlp_regress", config={"lr": 3e-3, "epochs": epochs, "batch_size": 64,
                                         "optimizer": "AdamW", "scheduler": "linear_warmup", "warmup": 30})
step = 0
for ep in range(epochs):
    for xb, yb in dl:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        acc.backward(loss)
        gn = acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad(); step += 1
        if step % 10 == 0:
            acc.log({"train/loss": loss.item(), "train/lr": sched.get_last_lr()[0], "train/grad_norm": float(gn)}, step=step)
    if ep in (1, 3, 5):
        acc.save_state()
    acc.print(f"epoch {ep} loss {loss.item():.4f}")
acc.end_training()
