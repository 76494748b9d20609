"""pytorch-ignite: deep (10 hidden layers) ReLU MLP on a synthetic 5-class problem.

healthy: Kaiming init, zero bias, Adam 2e-3 -> some hidden units die (logged per layer
as dead_frac/*), the network still learns.
dead_bias: identical except the hidden biases are initialised to -2.0 -> almost every
unit is dead from the second layer on, gradients vanish, loss sits at ln(5).
Layout: TensorboardLogger events (tb/), Checkpoint/DiskSaver files (checkpoints/),
FBResearchLogger text on stdout -> train.log, config.json.
"""
import argparse
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "dead_bias"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer  # noqa: E402
from ignite.handlers import Checkpoint, DiskSaver, FBResearchLogger, global_step_from_engine  # noqa: E402
from ignite.handlers.tensorboard_logger import (GradsScalarHandler, OptimizerParamsHandler,  # noqa: E402
                                                OutputHandler, TensorboardLogger)
from ignite.metrics import Accuracy, Loss  # noqa: E402

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(name)s %(levelname)s: %(message)s")

cfg = {"depth": 10, "width": 64, "in_dim": 16, "classes": 5, "n_train": 4096, "n_val": 1024,
       "batch_size": 64, "epochs": 10, "optimizer": "adam", "lr": 2e-3,
       "init": "kaiming_normal", "bias_init": 0.0 if args.variant == "healthy" else -2.0, "seed": 0}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)

# data: 5 classes, each a mixture of 3 Gaussian blobs in 16-D
g = torch.Generator().manual_seed(0)
centers = torch.randn(3 * cfg["classes"], cfg["in_dim"], generator=g) * 1.0


def make(n):
    comp = torch.randint(0, 3 * cfg["classes"], (n,), generator=g)
    x = centers[comp] + torch.randn(n, cfg["in_dim"], generator=g)
    return x, comp // 3


xtr, ytr = make(cfg["n_train"])
xva, yva = make(cfg["n_val"])
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=cfg["batch_size"],
                                           shuffle=True, generator=torch.Generator().manual_seed(1))
val_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xva, yva), batch_size=256)

layers = []
d = cfg["in_dim"]
for i in range(cfg["depth"]):
    lin = nn.Linear(d, cfg["width"])
    nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
    nn.init.constant_(lin.bias, cfg["bias_init"])
    layers += [lin, nn.ReLU()]
    d = cfg["width"]
layers.append(nn.Linear(d, cfg["classes"]))
model = nn.Sequential(*layers)
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
crit = nn.CrossEntropyLoss()

trainer = create_supervised_trainer(model, opt, crit)
metrics = {"accuracy": Accuracy(), "loss": Loss(crit)}
train_eval = create_supervised_evaluator(model, metrics=metrics)
val_eval = create_supervised_evaluator(model, metrics=metrics)
FBResearchLogger(logger=logging.getLogger("ignite.train"), show_output=True).attach(
    trainer, name="Train", every=16, optimizer=opt)

relus = [m for m in model if isinstance(m, nn.ReLU)]
dead_hist = []


@trainer.on(Events.EPOCH_COMPLETED)
def run_eval(engine):
    train_eval.run(train_loader)
    val_eval.run(val_loader)
    # dead units: ReLU output is zero for every validation example
    acts = []
    hooks = [r.register_forward_hook(lambda m, i, o: acts.append(o.detach())) for r in relus]
    with torch.no_grad():
        model(xva)
    for h in hooks:
        h.remove()
    fr = [float(((a > 0).sum(0) == 0).float().mean()) for a in acts]
    dead_hist.append(fr)
    for i, f in enumerate(fr):
        tb.writer.add_scalar(f"dead_frac/relu_{i}", f, engine.state.epoch)
    m = val_eval.state.metrics
    logging.getLogger("ignite.eval").info(
        f"Epoch[{engine.state.epoch}] train_loss={train_eval.state.metrics['loss']:.4f} "
        f"val_loss={m['loss']:.4f} val_acc={m['accuracy']:.4f} dead_frac={[round(f, 3) for f in fr]}")


tb = TensorboardLogger(log_dir=os.path.join(out, "tb"))
tb.attach(trainer, log_handler=OutputHandler(tag="training", output_transform=lambda loss: {"batchloss": loss}),
          event_name=Events.ITERATION_COMPLETED(every=4))
tb.attach(trainer, log_handler=OptimizerParamsHandler(opt), event_name=Events.ITERATION_STARTED(every=4))
tb.attach(trainer, log_handler=GradsScalarHandler(model, reduction=torch.norm), event_name=Events.ITERATION_COMPLETED(every=16))
for tag, ev in [("training", train_eval), ("validation", val_eval)]:
    tb.attach(ev, log_handler=OutputHandler(tag=tag, metric_names=["loss", "accuracy"],
                                            global_step_transform=global_step_from_engine(trainer)),
              event_name=Events.COMPLETED)

ckpt = Checkpoint({"model": model, "optimizer": opt, "trainer": trainer},
                  DiskSaver(os.path.join(out, "checkpoints"), require_empty=False), n_saved=2,
                  score_function=Checkpoint.get_default_score_fn("accuracy"), score_name="val_acc",
                  global_step_transform=global_step_from_engine(trainer))
val_eval.add_event_handler(Events.COMPLETED, ckpt)

trainer.run(train_loader, max_epochs=cfg["epochs"])
tb.close()
json.dump({"dead_frac_per_epoch": dead_hist}, open(os.path.join(out, "dead_units.json"), "w"))

