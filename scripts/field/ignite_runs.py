"""Generate PyTorch-Ignite training runs (synthetic data, tiny CNN, CPU).

Usage: python ignite_runs.py [<run_name> ...]   (all four when none is named)
Runs: ignite_healthy_sgd_cosine, ignite_healthy_adamw_warmup,
      ignite_lr_100x, ignite_labels_shuffled

Each run writes (framework output only) to tests/field/<run_name>/ ($FIELD_OUT) and adds its
answer to tests/field/answers.json:
  tb_logs/     ignite TensorboardLogger event file
  checkpoints/ ignite Checkpoint+DiskSaver files (checkpoint_<iter>.pt, best_model_*.pt)
"""
import os
import sys

os.environ.setdefault("NO_PROXY", "*")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import ignite
from ignite.engine import Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import (
    Checkpoint,
    DiskSaver,
    TerminateOnNan,
    CosineAnnealingScheduler,
    PiecewiseLinear,
    create_lr_scheduler_with_warmup,
    global_step_from_engine,
)
from ignite.handlers.tensorboard_logger import (
    TensorboardLogger,
    WeightsScalarHandler,
    GradsScalarHandler,
)

from common import OUT, record, run_dir, versions

ROOT = str(OUT)
NUM_CLASSES = 10


def make_data(seed=0, n_train=4000, n_val=500, noise=2.0):
    """10 classes; each class = fixed random 1x12x12 template + gaussian noise."""
    g = torch.Generator().manual_seed(seed)
    templates = torch.randn(NUM_CLASSES, 1, 12, 12, generator=g)

    def sample(n):
        y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
        shift = torch.randn(n, 1, 1, 1, generator=g) * 0.3
        x = templates[y] + noise * torch.randn(n, 1, 12, 12, generator=g) + shift
        return x, y

    return sample(n_train), sample(n_val)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 3 * 3, 64)
        self.fc2 = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)   # 6x6
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)   # 3x3
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


# ---- run configurations: every non-healthy run is ONE change from a healthy one ----
HEALTHY_SGD = dict(opt="sgd", lr=0.05, momentum=0.9, weight_decay=5e-4,
                   sched="cosine", epochs=15, shuffle_labels=False)
HEALTHY_ADAMW = dict(opt="adamw", lr=2e-3, weight_decay=1e-2,
                     sched="warmup_piecewise", epochs=12, shuffle_labels=False)

CONFIGS = {
    "ignite_healthy_sgd_cosine": dict(HEALTHY_SGD),
    "ignite_healthy_adamw_warmup": dict(HEALTHY_ADAMW),
    # single change: lr 0.05 -> 5.0 (x100) on the SGD+cosine config
    "ignite_lr_100x": dict(HEALTHY_SGD, lr=HEALTHY_SGD["lr"] * 100),
    # single change: training labels randomly permuted (val labels untouched), SGD+cosine config
    "ignite_labels_shuffled": dict(HEALTHY_SGD, shuffle_labels=True),
}


def run(name):
    cfg = CONFIGS[name]
    out = str(run_dir(name))
    tb_dir = os.path.join(out, "tb_logs")
    ckpt_dir = os.path.join(out, "checkpoints")

    torch.manual_seed(0)
    (xtr, ytr), (xva, yva) = make_data(seed=0)
    if cfg["shuffle_labels"]:
        ytr = ytr[torch.randperm(len(ytr), generator=torch.Generator().manual_seed(1))]
    train_loader = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True)
    train_eval_loader = DataLoader(TensorDataset(xtr, ytr), batch_size=256)
    val_loader = DataLoader(TensorDataset(xva, yva), batch_size=256)

    model = SmallCNN()
    if cfg["opt"] == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"],
                                    weight_decay=cfg["weight_decay"])
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    criterion = nn.CrossEntropyLoss()

    trainer = create_supervised_trainer(model, optimizer, criterion)
    metrics = {"accuracy": Accuracy(), "loss": Loss(criterion)}
    train_evaluator = create_supervised_evaluator(model, metrics=metrics)
    evaluator = create_supervised_evaluator(model, metrics=metrics)

    iters_per_epoch = len(train_loader)
    total_iters = cfg["epochs"] * iters_per_epoch
    if cfg["sched"] == "cosine":
        lr_scheduler = CosineAnnealingScheduler(optimizer, "lr", start_value=cfg["lr"],
                                                end_value=cfg["lr"] * 1e-2, cycle_size=total_iters)
    else:
        warmup = 2 * iters_per_epoch
        decay = PiecewiseLinear(optimizer, "lr", milestones_values=[
            (0, cfg["lr"]), (total_iters - warmup, cfg["lr"] * 0.05)])
        lr_scheduler = create_lr_scheduler_with_warmup(
            decay, warmup_start_value=cfg["lr"] * 0.01, warmup_duration=warmup)
    trainer.add_event_handler(Events.ITERATION_STARTED, lr_scheduler)
    trainer.add_event_handler(Events.ITERATION_COMPLETED, TerminateOnNan())

    @trainer.on(Events.EPOCH_COMPLETED)
    def run_validation(engine):
        train_evaluator.run(train_eval_loader)
        evaluator.run(val_loader)
        tm, vm = train_evaluator.state.metrics, evaluator.state.metrics
        print(f"[{name}] epoch {engine.state.epoch:3d} iter {engine.state.iteration:5d} "
              f"lr {optimizer.param_groups[0]['lr']:.5f} last_batch_loss {engine.state.output:.4f} "
              f"train_loss {tm['loss']:.4f} train_acc {tm['accuracy']:.4f} "
              f"val_loss {vm['loss']:.4f} val_acc {vm['accuracy']:.4f}", flush=True)

    # ---- TensorBoard logging, as in ignite's examples/mnist/mnist_with_tensorboard_logger.py ----
    tb_logger = TensorboardLogger(log_dir=tb_dir)
    tb_logger.attach_output_handler(
        trainer, event_name=Events.ITERATION_COMPLETED, tag="training",
        output_transform=lambda loss: {"batchloss": loss})
    for tag, ev in [("training", train_evaluator), ("validation", evaluator)]:
        tb_logger.attach_output_handler(
            ev, event_name=Events.EPOCH_COMPLETED, tag=tag, metric_names=["loss", "accuracy"],
            global_step_transform=global_step_from_engine(trainer))
    tb_logger.attach_opt_params_handler(trainer, event_name=Events.ITERATION_COMPLETED,
                                        optimizer=optimizer)
    tb_logger.attach(trainer, log_handler=WeightsScalarHandler(model),
                     event_name=Events.ITERATION_COMPLETED(every=10))
    tb_logger.attach(trainer, log_handler=GradsScalarHandler(model),
                     event_name=Events.ITERATION_COMPLETED(every=10))

    # ---- checkpoints ----
    to_save = {"model": model, "optimizer": optimizer, "trainer": trainer, "lr_scheduler": lr_scheduler}
    ckpt = Checkpoint(to_save, DiskSaver(ckpt_dir, create_dir=True, require_empty=False), n_saved=2)
    trainer.add_event_handler(Events.EPOCH_COMPLETED, ckpt)
    best = Checkpoint({"model": model}, DiskSaver(ckpt_dir, create_dir=True, require_empty=False),
                      n_saved=1, filename_prefix="best",
                      score_function=Checkpoint.get_default_score_fn("accuracy"),
                      score_name="val_accuracy",
                      global_step_transform=global_step_from_engine(trainer))
    evaluator.add_event_handler(Events.COMPLETED, best)

    print(f"[{name}] torch {torch.__version__} ignite {ignite.__version__} cfg={cfg} "
          f"iters/epoch={iters_per_epoch}", flush=True)
    state = trainer.run(train_loader, max_epochs=cfg["epochs"])
    print(f"[{name}] finished: epoch={state.epoch} iteration={state.iteration} "
          f"last_output={state.output}", flush=True)
    tb_logger.close()
    accept, bug = ANSWERS[name]
    record(name, versions("torch", "ignite"), bug, accept,
           profile={"resumed_at": None, "init_checkpoint": False})


# What `check` should name on each run (an empty list: a healthy run, 0 fail and 0 warn).
ANSWERS = {
    "ignite_healthy_sgd_cosine": ([], None),
    "ignite_healthy_adamw_warmup": ([], None),
    "ignite_lr_100x": (["S4.1", "O22", "S3.1", "S3.2", "O25"],
                       "SGD lr 5.0, 100x the healthy 0.05: the batch loss reaches 50160 at iteration 3, "
                       "then sits at ln 10 (2.30) with every gradient but the last bias exactly 0; val acc 0.088"),
    "ignite_labels_shuffled": (["F12", "F13", "V1"],
                               "training labels randomly permuted (val labels intact): the training loss "
                               "memorises slowly (2.30 -> 2.02), val loss rises 2.30 -> 2.40, val acc 0.13"),
}


if __name__ == "__main__":
    for n in sys.argv[1:] or list(CONFIGS):
        run(n)
