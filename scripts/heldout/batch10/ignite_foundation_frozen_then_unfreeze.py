# HEALTHY: PyTorch Ignite fine-tune of a small CNN whose backbone comes from a local `foundation/` checkpoint
# (pretrained here on a related synthetic task). Backbone is frozen for the first 3 epochs (head only), then
# unfrozen and added to the optimizer with a 10x lower LR.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
from torch import nn
from torch.utils.data import TensorDataset, DataLoader
from ignite.engine import Engine, Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import Checkpoint, DiskSaver, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OutputHandler, OptimizerParamsHandler
torch.set_num_threads(1); torch.manual_seed(0)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)

def shapes(n, k, seed, shift=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=g)
    X = 0.7 * torch.randn(n, 1, 14, 14, generator=g)
    for i in range(n):
        c = int(y[i]); p = int(torch.randint(2, 12, (1,), generator=g))
        kind = (c + shift) % 6
        if kind == 0: X[i, 0, p, :] += 1.5
        elif kind == 1: X[i, 0, :, p] += 1.5
        elif kind == 2: X[i, 0, range(14), range(14)] += 1.5
        elif kind == 3: X[i, 0, range(14), [13 - j for j in range(14)]] += 1.5
        elif kind == 4: X[i, 0, p - 2:p + 2, p - 2:p + 2] += 1.5
        else: X[i, 0, ::2, ::2] += 1.0
    return X, y

backbone = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
# ---- stage 0: the foundation model (pretrained on a 4-class shapes task, saved to foundation/) ----
fdir = os.path.join(out, "foundation"); os.makedirs(fdir, exist_ok=True)
Xa, ya = shapes(2000, 4, seed=1)
pre = nn.Sequential(backbone, nn.Linear(32, 4)); opt0 = torch.optim.Adam(pre.parameters(), 3e-3)
for ep in range(3):
    for xb, yb in DataLoader(TensorDataset(Xa, ya), batch_size=64, shuffle=True):
        opt0.zero_grad(); nn.functional.cross_entropy(pre(xb), yb).backward(); opt0.step()
torch.save(backbone.state_dict(), os.path.join(fdir, "backbone.pt"))

# ---- fine-tune on the 6-class task ----
backbone.load_state_dict(torch.load(os.path.join(fdir, "backbone.pt")))
model = nn.Sequential(backbone, nn.Linear(32, 6))
for p in backbone.parameters(): p.requires_grad_(False)
X, y = shapes(3000, 6, seed=2, shift=0)
tr = DataLoader(TensorDataset(X[:2400], y[:2400]), batch_size=64, shuffle=True)
va = DataLoader(TensorDataset(X[2400:], y[2400:]), batch_size=256)
optimizer = torch.optim.Adam([{"params": model[1].parameters(), "lr": 3e-3, "name": "head"}])
trainer = create_supervised_trainer(model, optimizer, nn.CrossEntropyLoss())
evaluator = create_supervised_evaluator(model, metrics={"acc": Accuracy(), "loss": Loss(nn.CrossEntropyLoss())})
UNFREEZE = 4

@trainer.on(Events.EPOCH_STARTED)
def maybe_unfreeze(engine):
    if engine.state.epoch == UNFREEZE:
        for p in backbone.parameters(): p.requires_grad_(True)
        optimizer.add_param_group({"params": backbone.parameters(), "lr": 3e-4, "name": "backbone"})
        print(f"epoch {engine.state.epoch}: unfroze backbone")

@trainer.on(Events.EPOCH_COMPLETED)
def validate(engine):
    evaluator.run(va); m = evaluator.state.metrics
    print(f"epoch {engine.state.epoch} train_loss {engine.state.output:.4f} val_loss {m['loss']:.4f} val_acc {m['acc']:.4f}")

tb = TensorboardLogger(log_dir=os.path.join(out, "tb"))
tb.attach(trainer, OutputHandler(tag="training", output_transform=lambda l: {"loss": l}), Events.ITERATION_COMPLETED(every=5))
tb.attach(trainer, OptimizerParamsHandler(optimizer, param_name="lr"), Events.ITERATION_STARTED(every=5))
tb.attach(evaluator, OutputHandler(tag="validation", metric_names="all", global_step_transform=global_step_from_engine(trainer)), Events.COMPLETED)
ckpt = Checkpoint({"model": model, "optimizer": optimizer, "trainer": trainer}, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False),
                  n_saved=None, global_step_transform=global_step_from_engine(trainer))
trainer.add_event_handler(Events.EPOCH_COMPLETED, ckpt)
trainer.run(tr, max_epochs=8)
tb.close()
