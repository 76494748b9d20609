"""timm: fine-tune a small timm EfficientNet (test_efficientnet) whose weights come from a short
pretraining on a related synthetic task; the classifier is swapped with model.reset_classifier().

Layout like timm's train.py: args.yaml, summary.csv (timm.utils.update_summary), checkpoints via
timm.utils.CheckpointSaver (checkpoint-<epoch>.pth.tar, last.pth.tar, model_best.pth.tar),
train.log (timm-style "Train: <epoch> [i/n] Loss ..." lines), pretrained/pretrain_weights.pth.
variants: healthy | optimizer_before_head_swap (create_optimizer_v2 is called before
reset_classifier(6), so the new classifier's weights are not in the optimizer and stay at their
random init while the backbone is fine-tuned against it).
"""
import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "optimizer_before_head_swap"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

from collections import OrderedDict  # noqa: E402

import numpy as np  # noqa: E402
import timm  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import yaml  # noqa: E402
from timm.optim import create_optimizer_v2  # noqa: E402
from timm.scheduler import CosineLRScheduler  # noqa: E402
from timm.utils import AverageMeter, CheckpointSaver, accuracy, update_summary  # noqa: E402

from shapes import dataset  # noqa: E402

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
_logger = logging.getLogger("train")

# ---- short pretraining on filled-shape identity (4 classes)
rng = np.random.default_rng(0)
pre = dataset(rng, 1024, [("square", True), ("circle", True), ("triangle", True), ("cross", True)])
pm = timm.create_model("test_efficientnet", num_classes=4, pretrained=False)
popt = torch.optim.AdamW(pm.parameters(), 3e-3)
for ep in range(3):
    perm = torch.randperm(len(pre))
    for b in range(0, len(pre), 64):
        xb = torch.stack([pre[i][0] for i in perm[b:b + 64]])
        yb = torch.stack([pre[i][1] for i in perm[b:b + 64]])
        loss = nn.functional.cross_entropy(pm(xb), yb)
        popt.zero_grad()
        loss.backward()
        popt.step()
    _logger.info(f"pretrain epoch {ep} loss {loss.item():.4f}")
os.makedirs(os.path.join(out, "pretrained"))
torch.save(pm.state_dict(), os.path.join(out, "pretrained", "pretrain_weights.pth"))

# ---- fine-tune: 6 classes (3 shapes x filled/hollow)
classes = [("square", True), ("square", False), ("circle", True), ("circle", False),
           ("triangle", True), ("triangle", False)]
train = dataset(rng, 1536, classes)
val = dataset(rng, 384, classes)
cfg = dict(model="test_efficientnet", pretrained_path="pretrained/pretrain_weights.pth", num_classes=6,
           opt="sgd", lr=0.05, momentum=0.9, weight_decay=1e-4, sched="cosine", epochs=6, warmup_epochs=1,
           warmup_lr=0.005, min_lr=1e-4, batch_size=64, smoothing=0.0, seed=0,
           output=out, experiment="shapes6-ft")
with open(os.path.join(out, "args.yaml"), "w") as f:
    yaml.safe_dump(cfg, f)

model = timm.create_model("test_efficientnet", num_classes=4, pretrained=False)
model.load_state_dict(torch.load(os.path.join(out, "pretrained", "pretrain_weights.pth")))
if args.variant == "optimizer_before_head_swap":
    optimizer = create_optimizer_v2(model, opt=cfg["opt"], lr=cfg["lr"], momentum=cfg["momentum"],
                                    weight_decay=cfg["weight_decay"])
    model.reset_classifier(cfg["num_classes"])
else:
    model.reset_classifier(cfg["num_classes"])
    optimizer = create_optimizer_v2(model, opt=cfg["opt"], lr=cfg["lr"], momentum=cfg["momentum"],
                                    weight_decay=cfg["weight_decay"])
_logger.info(f"Model {cfg['model']} created, param count: {sum(p.numel() for p in model.parameters())}")
sched = CosineLRScheduler(optimizer, t_initial=cfg["epochs"], lr_min=cfg["min_lr"], warmup_t=cfg["warmup_epochs"],
                          warmup_lr_init=cfg["warmup_lr"])
saver = CheckpointSaver(model, optimizer, args=argparse.Namespace(**cfg), checkpoint_dir=out, recovery_dir=out,
                        decreasing=False, max_history=2)
loss_fn = nn.CrossEntropyLoss()
xva = torch.stack([v[0] for v in val])
yva = torch.stack([v[1] for v in val])
n_batches = len(train) // cfg["batch_size"]
best = None
for epoch in range(cfg["epochs"]):
    model.train()
    losses = AverageMeter()
    perm = torch.randperm(len(train))
    t0 = time.time()
    for bi in range(n_batches):
        idx = perm[bi * cfg["batch_size"]:(bi + 1) * cfg["batch_size"]]
        xb = torch.stack([train[i][0] for i in idx])
        yb = torch.stack([train[i][1] for i in idx])
        loss = loss_fn(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), xb.size(0))
        if bi % 8 == 0 or bi == n_batches - 1:
            lr = optimizer.param_groups[0]["lr"]
            _logger.info(f"Train: {epoch} [{bi:>3d}/{n_batches} ({100. * bi / n_batches:>3.0f}%)]  "
                         f"Loss: {losses.val:#.3g} ({losses.avg:#.3g})  "
                         f"Time: {time.time() - t0:.3f}s  LR: {lr:.3e}")
    model.eval()
    with torch.no_grad():
        out_v = model(xva)
        vloss = loss_fn(out_v, yva).item()
        top1, top5 = accuracy(out_v, yva, topk=(1, 5))
    eval_metrics = OrderedDict(loss=vloss, top1=top1.item(), top5=top5.item())
    _logger.info(f"Test: [{epoch}]  Loss: {vloss:.4f}  Acc@1: {top1.item():.4f}  Acc@5: {top5.item():.4f}")
    update_summary(epoch, OrderedDict(loss=losses.avg), eval_metrics, os.path.join(out, "summary.csv"),
                   lr=optimizer.param_groups[0]["lr"], write_header=epoch == 0)
    best, best_epoch = saver.save_checkpoint(epoch, metric=eval_metrics["top1"])
    sched.step(epoch + 1, eval_metrics["top1"])
_logger.info(f"*** Best metric: {best} (epoch {best_epoch})")

