"""PyTorch-Ignite CNN classifier, logged once per epoch with ignite's TensorboardLogger (train + validation
metrics, optimizer lr) and checkpointed with ignite's Checkpoint/DiskSaver (best 2 by val accuracy + last).
usage: ignite_cnn.py RUNS NAME {shapes|digits}"""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from ignite.engine import Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import Checkpoint, DiskSaver, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OutputHandler, OptimizerParamsHandler

name, task = sys.argv[2], sys.argv[3]
out = common.run_dir(name)
common.seed_all(0)
if task == "shapes":
    x, y = common.shape_images(2400, size=24, seed=0)
    x = common.to_tensor_images(x); n_cls = 4; epochs = 14
    opt_fn = lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4)
else:
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 8.0 - 1.0
    x = torch.nn.functional.interpolate(x, size=16, mode="bilinear")
    y = d.target; n_cls = 10; epochs = 12
    opt_fn = lambda p: torch.optim.Adam(p, lr=0.3)
y = torch.tensor(y)
perm = torch.randperm(len(y))
n_val = len(y) // 5
va, tr = perm[:n_val], perm[n_val:]
train_loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True)
val_loader = DataLoader(TensorDataset(x[va], y[va]), batch_size=256)
cin = x.shape[1]
model = nn.Sequential(nn.Conv2d(cin, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(32, n_cls))
optimizer = opt_fn(model.parameters())
criterion = nn.CrossEntropyLoss()
trainer = create_supervised_trainer(model, optimizer, criterion)
metrics = {"accuracy": Accuracy(), "loss": Loss(criterion)}
train_eval = create_supervised_evaluator(model, metrics=metrics)
val_eval = create_supervised_evaluator(model, metrics=metrics)


@trainer.on(Events.EPOCH_COMPLETED)
def run_evals(engine):
    train_eval.run(train_loader)
    val_eval.run(val_loader)
    print(engine.state.epoch, {k: round(v, 4) for k, v in train_eval.state.metrics.items()},
          {k: round(v, 4) for k, v in val_eval.state.metrics.items()}, flush=True)


tb = TensorboardLogger(log_dir=os.path.join(out, "tb_logs"))
for tag, ev in [("training", train_eval), ("validation", val_eval)]:
    tb.attach(ev, log_handler=OutputHandler(tag=tag, metric_names=["loss", "accuracy"],
                                            global_step_transform=global_step_from_engine(trainer)),
              event_name=Events.COMPLETED)
tb.attach(trainer, log_handler=OptimizerParamsHandler(optimizer), event_name=Events.EPOCH_STARTED)
best = Checkpoint({"model": model, "optimizer": optimizer, "trainer": trainer},
                  DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=2,
                  filename_prefix="best", score_function=lambda e: e.state.metrics["accuracy"], score_name="val_acc",
                  global_step_transform=global_step_from_engine(trainer))
val_eval.add_event_handler(Events.COMPLETED, best)
last = Checkpoint({"model": model, "optimizer": optimizer, "trainer": trainer},
                  DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=1)
trainer.add_event_handler(Events.EPOCH_COMPLETED, last)
trainer.run(train_loader, max_epochs=epochs)
tb.close()
