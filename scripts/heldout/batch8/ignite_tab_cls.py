# Healthy (mild late overfit): pytorch-ignite MLP classifier on a small noisy synthetic set;
# training loss per iteration, validation per epoch, TensorboardLogger + ModelCheckpoint.
import os, sys, torch
torch.set_num_threads(1)
from ignite.engine import Events, create_supervised_trainer, create_supervised_evaluator
from ignite.metrics import Accuracy, Loss
from ignite.handlers import ModelCheckpoint, global_step_from_engine
from ignite.handlers.tensorboard_logger import TensorboardLogger, OutputHandler, OptimizerParamsHandler
from ignite.utils import manual_seed
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
manual_seed(0)
g = torch.Generator().manual_seed(0)
D = 20
wtrue = torch.randn(D, generator=g)
def make(n):
    x = torch.randn(n, D, generator=g)
    y = ((x @ wtrue + 0.5 * torch.randn(n, generator=g)) > 0).long()
    flip = torch.rand(n, generator=g) < 0.1; y[flip] = 1 - y[flip]
    return torch.utils.data.TensorDataset(x, y)
tr = torch.utils.data.DataLoader(make(NTRAIN := int(os.environ.get("NTRAIN", 400))), batch_size=32, shuffle=True,
                                 generator=torch.Generator().manual_seed(1))
va = torch.utils.data.DataLoader(make(2000), batch_size=500)
model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 2))
opt = torch.optim.Adam(model.parameters(), lr=float(os.environ.get("LR", 1e-3)))
crit = torch.nn.CrossEntropyLoss()
trainer = create_supervised_trainer(model, opt, crit)
evaluator = create_supervised_evaluator(model, metrics={"accuracy": Accuracy(), "loss": Loss(crit)})
EPOCHS = int(os.environ.get("EPOCHS", 10))
@trainer.on(Events.EPOCH_COMPLETED)
def run_val(engine):
    evaluator.run(va); m = evaluator.state.metrics
    print(f"epoch {engine.state.epoch} val_loss {m['loss']:.4f} val_acc {m['accuracy']:.4f} train_loss {engine.state.output:.4f}")
tbl = TensorboardLogger(log_dir=os.path.join(out, "tb_logs"))
tbl.attach(trainer, OutputHandler(tag="training", output_transform=lambda l: {"loss": l}),
           event_name=Events.ITERATION_COMPLETED)
tbl.attach(evaluator, OutputHandler(tag="validation", metric_names=["loss", "accuracy"],
                                    global_step_transform=global_step_from_engine(trainer)),
           event_name=Events.EPOCH_COMPLETED)
tbl.attach(trainer, OptimizerParamsHandler(opt), event_name=Events.EPOCH_STARTED)
ckpt = ModelCheckpoint(os.path.join(out, "checkpoints"), "mlp", n_saved=3, require_empty=False,
                       score_function=lambda e: e.state.metrics["accuracy"], score_name="val_acc",
                       global_step_transform=global_step_from_engine(trainer))
evaluator.add_event_handler(Events.COMPLETED, ckpt, {"model": model, "optimizer": opt})
trainer.run(tr, max_epochs=EPOCHS)
tbl.close()
