# pytorch-ignite MLP classifier on synthetic 8-class data; TensorBoardLogger once per epoch, Checkpoint best-2 by val acc + last.
# usage: ignite_blobs_clf.py RUNS NAME [ok|copy]
import os, sys, copy
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
torch.set_num_threads(1); torch.manual_seed(0)
from ignite.engine import Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import Checkpoint, DiskSaver, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OptimizerParamsHandler
RUNS, NAME = sys.argv[1], sys.argv[2]
MODE = sys.argv[3] if len(sys.argv) > 3 else "ok"
out = os.path.join(RUNS, NAME)
C, D = 8, 24
centers = torch.randn(C, D) * 0.4
def data(n, seed):
    g = torch.Generator().manual_seed(seed); y = torch.randint(0, C, (n,), generator=g)
    return TensorDataset(centers[y] + torch.randn(n, D, generator=g), y)
train_dl = DataLoader(data(3000, 1), batch_size=64, shuffle=True); val_dl = DataLoader(data(800, 2), batch_size=256)
model = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, C))
if MODE == "copy":
    # "keep an EMA/teacher copy around" -- optimizer accidentally built on the copy's parameters
    ema_model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(ema_model.parameters(), lr=0.005, momentum=0.9)
else:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.3)
crit = nn.CrossEntropyLoss()
trainer = create_supervised_trainer(model, optimizer, crit)
metrics = {"accuracy": Accuracy(), "loss": Loss(crit)}
train_eval = create_supervised_evaluator(model, metrics=metrics)
evaluator = create_supervised_evaluator(model, metrics=metrics)
@trainer.on(Events.EPOCH_COMPLETED)
def run_eval(engine):
    train_eval.run(train_dl); evaluator.run(val_dl)
    print(engine.state.epoch, train_eval.state.metrics, evaluator.state.metrics)
trainer.add_event_handler(Events.EPOCH_COMPLETED, lambda e: sched.step())
tb = TensorboardLogger(log_dir=os.path.join(out, "tb"))
tb.attach_output_handler(train_eval, event_name=Events.EPOCH_COMPLETED, tag="train", metric_names=["loss", "accuracy"],
                         global_step_transform=global_step_from_engine(trainer))
tb.attach_output_handler(evaluator, event_name=Events.EPOCH_COMPLETED, tag="validation", metric_names=["loss", "accuracy"],
                         global_step_transform=global_step_from_engine(trainer))
tb.attach(trainer, log_handler=OptimizerParamsHandler(optimizer, param_name="lr"), event_name=Events.EPOCH_STARTED)
to_save = {"model": model, "optimizer": optimizer, "trainer": trainer, "lr_scheduler": sched}
best = Checkpoint(to_save, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=2, filename_prefix="best",
                  score_function=lambda e: e.state.metrics["accuracy"], score_name="val_acc",
                  global_step_transform=global_step_from_engine(trainer))
evaluator.add_event_handler(Events.COMPLETED, best)
last = Checkpoint(to_save, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=1, filename_prefix="last")
trainer.add_event_handler(Events.EPOCH_COMPLETED, last)
w0 = model[0].weight.detach().clone()
accs = []
evaluator.add_event_handler(Events.COMPLETED, lambda e: accs.append(e.state.metrics["accuracy"]))
trainer.run(train_dl, max_epochs=20)
tb.close()
print("val acc first/last/best", accs[0], accs[-1], max(accs), "weight change", (model[0].weight - w0).norm().item())
if MODE == "ok":
    assert accs[-1] > accs[0] + 0.1 and accs[-1] > 0.5, accs
