"""a slim timm ResNet-10t (channels 16-128) trained with PyTorch-Ignite on procedurally drawn 32x32 shapes (5 classes).

SGD + Nesterov with a cosine-annealed LR over the run (`T_max` = number of epochs).
Logs: TensorBoard via ignite's TensorboardLogger (tb/), an epoch-level CSV (epoch_metrics.csv),
and ignite Checkpoint objects (model/optimizer/lr_scheduler/trainer) in checkpoints/.
"""
import csv
import os
import sys

import numpy as np
import timm
import torch
import torch.nn as nn
from ignite.contrib.handlers import ProgressBar
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.handlers import Checkpoint, DiskSaver, global_step_from_engine
from ignite.handlers.tensorboard_logger import OptimizerParamsHandler, OutputHandler, TensorboardLogger
from ignite.metrics import Accuracy, Loss
from torch.utils.data import DataLoader, TensorDataset

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)
EPOCHS = 15


def draw(n, seed, S=32):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:S, 0:S]
    X = np.zeros((n, 1, S, S), np.float32)
    y = rng.integers(0, 5, n)
    for i in range(n):
        cx, cy = rng.uniform(10, 22, 2)
        r = rng.uniform(5, 9)
        dx, dy = xx - cx, yy - cy
        if y[i] == 0:
            m = dx ** 2 + dy ** 2 <= r ** 2
        elif y[i] == 1:
            m = (abs(dx) <= r * .8) & (abs(dy) <= r * .8)
        elif y[i] == 2:
            m = (dy <= r * .7) & (dy >= -r) & (abs(dx) <= (dy + r) * .55)
        elif y[i] == 3:
            m = ((abs(dx) <= 1.5) & (abs(dy) <= r)) | ((abs(dy) <= 1.5) & (abs(dx) <= r))
        else:
            m = (dx ** 2 + dy ** 2 <= r ** 2) & (dx ** 2 + dy ** 2 >= (r - 2.5) ** 2)
        X[i, 0] = m * rng.uniform(.5, 1.) + rng.normal(0, .45, (S, S))
    return torch.tensor(X), torch.tensor(y)


train_dl = DataLoader(TensorDataset(*draw(1600, 0)), batch_size=64, shuffle=True, drop_last=True)
val_dl = DataLoader(TensorDataset(*draw(500, 1)), batch_size=250)

model = timm.create_model("resnet10t", pretrained=False, in_chans=1, num_classes=5, channels=(16, 32, 64, 128))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS, eta_min=1e-4)
criterion = nn.CrossEntropyLoss(label_smoothing=0.05)

trainer = create_supervised_trainer(model, optimizer, criterion)
trainer.add_event_handler(Events.ITERATION_COMPLETED, lambda engine: scheduler.step())
metrics = {"accuracy": Accuracy(), "loss": Loss(criterion)}
train_eval = create_supervised_evaluator(model, metrics=metrics)
val_eval = create_supervised_evaluator(model, metrics=metrics)

csv_path = os.path.join(out, "epoch_metrics.csv")
with open(csv_path, "w", newline="") as f:
    csv.writer(f).writerow(["epoch", "iteration", "lr", "train_loss", "train_acc", "val_loss", "val_acc"])


@trainer.on(Events.EPOCH_COMPLETED)
def run_eval(engine):
    train_eval.run(train_dl)
    val_eval.run(val_dl)
    tm, vm = train_eval.state.metrics, val_eval.state.metrics
    with open(csv_path, "a", newline="") as f:
        csv.writer(f).writerow([engine.state.epoch, engine.state.iteration, optimizer.param_groups[0]["lr"],
                                tm["loss"], tm["accuracy"], vm["loss"], vm["accuracy"]])
    print(f"epoch {engine.state.epoch}: train_loss {tm['loss']:.4f} val_loss {vm['loss']:.4f} val_acc {vm['accuracy']:.4f}")


tb = TensorboardLogger(log_dir=os.path.join(out, "tb"))
tb.attach(trainer, OutputHandler(tag="training", output_transform=lambda loss: {"batch_loss": loss}),
          event_name=Events.ITERATION_COMPLETED)
tb.attach(trainer, OptimizerParamsHandler(optimizer, param_name="lr"), event_name=Events.ITERATION_STARTED)
for tag, ev in (("train_eval", train_eval), ("validation", val_eval)):
    tb.attach(ev, OutputHandler(tag=tag, metric_names=["loss", "accuracy"],
                                global_step_transform=global_step_from_engine(trainer)),
              event_name=Events.EPOCH_COMPLETED)

to_save = {"model": model, "optimizer": optimizer, "lr_scheduler": scheduler, "trainer": trainer}
best = Checkpoint(to_save, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=2,
                  filename_prefix="best", score_function=lambda e: e.state.metrics["accuracy"], score_name="val_acc",
                  global_step_transform=global_step_from_engine(trainer))
val_eval.add_event_handler(Events.COMPLETED, best)
last = Checkpoint(to_save, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=1,
                  filename_prefix="last")
trainer.add_event_handler(Events.EPOCH_COMPLETED(every=3), last)

trainer.run(train_dl, max_epochs=EPOCHS)
tb.close()
