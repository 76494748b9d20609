# PyTorch Ignite: MLP with BatchNorm + Dropout, custom train step, validation every epoch with the
# standard supervised evaluator.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
from torch import nn
from torch.utils.data import TensorDataset, DataLoader
from ignite.engine import Engine, Events, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss, RunningAverage
from ignite.handlers import Checkpoint, DiskSaver, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OutputHandler
torch.set_num_threads(1); torch.manual_seed(0)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
g = torch.Generator().manual_seed(0)
X = torch.randn(6000, 30, generator=g) * torch.linspace(0.5, 4, 30) + 2.0   # un-normalised features
W = torch.randn(30, 4, generator=g)
y = (((X - 2.0) / torch.linspace(0.5, 4, 30)) @ W + 0.5 * torch.randn(6000, 4, generator=g)).argmax(1)
tr = DataLoader(TensorDataset(X[:5000], y[:5000]), batch_size=64, shuffle=True)
va = DataLoader(TensorDataset(X[5000:], y[5000:]), batch_size=500)
model = nn.Sequential(nn.Linear(30, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3),
                      nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

model.train()
def train_step(engine, batch):
    x, t = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), t)
    loss.backward(); optimizer.step()
    return loss.item()

trainer = Engine(train_step)
RunningAverage(output_transform=lambda l: l, alpha=0.9).attach(trainer, "loss_avg")
evaluator = create_supervised_evaluator(model, metrics={"acc": Accuracy(), "loss": Loss(loss_fn)})

@trainer.on(Events.EPOCH_COMPLETED)
def validate(engine):
    evaluator.run(va); m = evaluator.state.metrics
    print(f"epoch {engine.state.epoch} train_loss_avg {engine.state.metrics['loss_avg']:.4f} val_loss {m['loss']:.4f} val_acc {m['acc']:.4f}")

tb = TensorboardLogger(log_dir=os.path.join(out, "tb"))
tb.attach(trainer, OutputHandler(tag="training", output_transform=lambda l: {"batch_loss": l}), Events.ITERATION_COMPLETED(every=5))
tb.attach(evaluator, OutputHandler(tag="validation", metric_names="all", global_step_transform=global_step_from_engine(trainer)), Events.COMPLETED)
ckpt = Checkpoint({"model": model, "optimizer": optimizer, "trainer": trainer}, DiskSaver(os.path.join(out, "checkpoints"), require_empty=False),
                  n_saved=None, global_step_transform=global_step_from_engine(trainer))
trainer.add_event_handler(Events.EPOCH_COMPLETED, ckpt)
trainer.run(tr, max_epochs=10)
tb.close()
