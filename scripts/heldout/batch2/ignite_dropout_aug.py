# PyTorch-Ignite: small CNN with Dropout(0.5) and strong train-time augmentation
# (random shifts, gaussian noise, cutout) on synthetic 20x20 "glyph" images.
# TensorboardLogger: per-iteration train loss + lr, per-epoch validation metrics.
import sys, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from ignite.engine import Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import ModelCheckpoint, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OutputHandler, OptimizerParamsHandler

torch.set_num_threads(1)
torch.manual_seed(0)
out = sys.argv[1]
S, C = 20, 6
g = torch.Generator().manual_seed(0)
protos = (torch.rand(C, 1, 5, 5, generator=g) > 0.5).float()
protos = F.interpolate(protos, size=(S, S), mode="nearest")

def make(n):
    y = torch.randint(0, C, (n,), generator=g)
    x = protos[y] + 0.6 * torch.randn(n, 1, S, S, generator=g)
    return x, y

class Glyphs(Dataset):
    def __init__(self, x, y, augment):
        self.x, self.y, self.augment = x, y, augment
    def __len__(self): return len(self.y)
    def __getitem__(self, i):
        x = self.x[i]
        if self.augment:
            dx, dy = torch.randint(-3, 4, (2,)).tolist()
            x = torch.roll(x, (dy, dx), dims=(1, 2))
            x = x + 0.8 * torch.randn_like(x)
            cy, cx = torch.randint(0, S - 8, (2,)).tolist()
            x = x.clone(); x[:, cy:cy + 8, cx:cx + 8] = 0.0
        return x, self.y[i]

xtr, ytr = make(3000); xva, yva = make(1000)
train_loader = DataLoader(Glyphs(xtr, ytr, True), batch_size=64, shuffle=True)
val_loader = DataLoader(Glyphs(xva, yva, False), batch_size=500)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Dropout(0.5), nn.Linear(32 * 5 * 5, 128), nn.ReLU(), nn.Dropout(0.5),
    nn.Linear(128, C))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
trainer = create_supervised_trainer(model, optimizer, criterion)
evaluator = create_supervised_evaluator(model, metrics={"accuracy": Accuracy(), "loss": Loss(criterion)})

@trainer.on(Events.EPOCH_COMPLETED)
def run_validation(engine):
    evaluator.run(val_loader)
    m = evaluator.state.metrics
    print(f"Epoch {engine.state.epoch}: val_loss={m['loss']:.4f} val_acc={m['accuracy']:.4f}", flush=True)

tb_logger = TensorboardLogger(log_dir=os.path.join(out, "tb_logs"))
tb_logger.attach_output_handler(trainer, event_name=Events.ITERATION_COMPLETED, tag="training",
                                output_transform=lambda loss: {"batchloss": loss})
tb_logger.attach_opt_params_handler(trainer, event_name=Events.ITERATION_STARTED, optimizer=optimizer)
tb_logger.attach_output_handler(evaluator, event_name=Events.EPOCH_COMPLETED, tag="validation",
                                metric_names=["loss", "accuracy"],
                                global_step_transform=global_step_from_engine(trainer))
ckpt = ModelCheckpoint(os.path.join(out, "checkpoints"), "glyphcnn", n_saved=2, require_empty=False,
                       score_function=lambda e: -e.state.metrics["loss"], score_name="neg_val_loss",
                       global_step_transform=global_step_from_engine(trainer))
evaluator.add_event_handler(Events.COMPLETED, ckpt, {"model": model})
trainer.run(train_loader, max_epochs=10)
tb_logger.close()
