"""timm image classification runs, following timm's train.py: timm.create_model (resnet10t with
its widths cut to 8/16/24/32 channels, about 34 k parameters), create_optimizer_v2 from
optimizer_kwargs(args), create_scheduler_v2 from scheduler_kwargs(args) stepped per update
(step_update) and per epoch (step), CheckpointSaver (checkpoint-N.pth.tar, last.pth.tar,
model_best.pth.tar), update_summary (summary.csv), args.yaml written as train.py writes it,
and train.py's per-step log lines through timm's setup_default_logging(log_path=...) file
handler (train.log; train.py itself logs to stdout only, so this is the tee'd log).

Data: synthetic 32x32 RGB images in 10 classes (5 colours x horizontal/vertical stripes) with
noise, normalised with timm's ImageNet mean/std. The run folder is train.py's output dir
(--output tests/field --experiment <run>)."""
import argparse
import logging
import math
import os
import sys
import time
from collections import OrderedDict

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import yaml  # noqa: E402
import timm  # noqa: E402
from timm.data import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD  # noqa: E402
from timm.optim import create_optimizer_v2, optimizer_kwargs  # noqa: E402
from timm.scheduler import create_scheduler_v2, scheduler_kwargs  # noqa: E402
from timm.utils import (AverageMeter, CheckpointSaver, accuracy,  # noqa: E402
                        setup_default_logging, update_summary)

from common import OUT, record, run_dir, versions  # noqa: E402

_logger = logging.getLogger("train")
COLOURS = torch.tensor([[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.2, 0.9], [0.9, 0.9, 0.1],
                        [0.8, 0.2, 0.8]])


def synth(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = 0.5 + 0.3 * torch.randn(n, 3, 32, 32, generator=g)
    period = torch.randint(4, 9, (n,), generator=g)
    phase = torch.randint(0, 8, (n,), generator=g)
    idx = torch.arange(32)
    for i in range(n):
        stripe = ((idx + phase[i]) % period[i]) < period[i] // 2
        mask = stripe[:, None].expand(32, 32) if y[i] % 2 == 0 else stripe[None, :].expand(32, 32)
        col = COLOURS[y[i] // 2][:, None, None]
        x[i] = torch.where(mask[None], 0.3 * col + 0.7 * x[i], x[i])
    x = x.clamp(0, 1)
    mean = torch.tensor(IMAGENET_DEFAULT_MEAN)[:, None, None]
    std = torch.tensor(IMAGENET_DEFAULT_STD)[:, None, None]
    return (x - mean) / std, y


def base_args(name, **kw):
    a = argparse.Namespace(
        data_dir=None, dataset="synthetic/stripes10", train_split="train", val_split="validation",
        model="resnet10t", pretrained=False, num_classes=10, img_size=32,
        input_size=[3, 32, 32], mean=list(IMAGENET_DEFAULT_MEAN), std=list(IMAGENET_DEFAULT_STD),
        batch_size=64, validation_batch_size=None, opt="sgd", opt_eps=None, opt_betas=None,
        momentum=0.9, weight_decay=5e-4, clip_grad=None, clip_mode="norm", layer_decay=None,
        sched="cosine", sched_on_updates=True, lr=0.05, lr_base=0.1, lr_base_size=256,
        warmup_lr=1e-5, min_lr=1e-5, epochs=10, warmup_epochs=1, warmup_prefix=False,
        cooldown_epochs=0, decay_rate=0.1, smoothing=0.0, drop=0.0, drop_path=None,
        model_ema=False, amp=False, channels_last=False, seed=42, log_interval=5,
        checkpoint_hist=2, workers=0, output=str(OUT), experiment=name, eval_metric="top1",
        filter_bias_and_bn=True, model_kwargs=dict(channels=[8, 16, 24, 32], stem_width=8),
    )
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, lr_scheduler, num_updates,
                    set_train=True):
    if set_train:
        model.train()
    losses_m, update_time_m, data_time_m = AverageMeter(), AverageMeter(), AverageMeter()
    updates_per_epoch = len(loader)
    end = time.time()
    for update_idx, (x, y) in enumerate(loader):
        data_time_m.update(time.time() - end)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        num_updates += 1
        losses_m.update(loss.item(), x.size(0))
        update_time_m.update(time.time() - end)
        lrl = [g["lr"] for g in optimizer.param_groups]
        lr = sum(lrl) / len(lrl)
        if update_idx % args.log_interval == 0 or update_idx == updates_per_epoch - 1:
            _logger.info(
                f"Train: {epoch} [{update_idx:>4d}/{updates_per_epoch} "
                f"({100. * (update_idx + 1) / updates_per_epoch:>3.0f}%)]  "
                f"Loss: {losses_m.val:#.3g} ({losses_m.avg:#.3g})  "
                f"Time: {update_time_m.val:.3f}s, {x.size(0) / update_time_m.val:>7.2f}/s  "
                f"({update_time_m.avg:.3f}s, {x.size(0) / update_time_m.avg:>7.2f}/s)  "
                f"LR: {lr:.3e}  "
                f"Data: {data_time_m.val:.3f} ({data_time_m.avg:.3f})")
        lr_scheduler.step_update(num_updates=num_updates, metric=losses_m.avg)
        end = time.time()
    return OrderedDict([("loss", losses_m.avg)]), num_updates


@torch.no_grad()
def validate(model, loader, loss_fn, args, set_eval=True):
    if set_eval:
        model.eval()
    losses_m, top1_m, top5_m = AverageMeter(), AverageMeter(), AverageMeter()
    last_idx = len(loader) - 1
    for batch_idx, (x, y) in enumerate(loader):
        out = model(x)
        loss = loss_fn(out, y)
        acc1, acc5 = accuracy(out, y, topk=(1, 5))
        losses_m.update(loss.item(), x.size(0))
        top1_m.update(acc1.item(), x.size(0))
        top5_m.update(acc5.item(), x.size(0))
        if batch_idx == last_idx:
            _logger.info(f"Test: [{batch_idx:>4d}/{last_idx}]  Loss: {losses_m.val:>7.3f} "
                         f"({losses_m.avg:>6.3f})  Acc@1: {top1_m.val:>7.3f} ({top1_m.avg:>7.3f})  "
                         f"Acc@5: {top5_m.val:>7.3f} ({top5_m.avg:>7.3f})")
    return OrderedDict([("loss", losses_m.avg), ("top1", top1_m.avg), ("top5", top5_m.avg)])


def train(name, bn_eval=False, **kw):
    args = base_args(name, **kw)
    out = run_dir(name)
    for h in list(logging.root.handlers):
        logging.root.removeHandler(h)
    setup_default_logging(log_path=str(out / "train.log"))
    torch.manual_seed(args.seed)
    model = timm.create_model(args.model, pretrained=False, num_classes=args.num_classes,
                              drop_rate=args.drop, **args.model_kwargs)
    _logger.info(f"Model {args.model} created, param count:"
                 f"{sum(m.numel() for m in model.parameters())}")
    if args.filter_bias_and_bn:
        optimizer = create_optimizer_v2(model, **optimizer_kwargs(cfg=args))
    else:
        optimizer = create_optimizer_v2(model, **optimizer_kwargs(cfg=args),
                                        filter_bias_and_bn=False)
    xtr, ytr = synth(2048, 1)
    xva, yva = synth(512, 2)
    g = torch.Generator().manual_seed(args.seed)
    loader_train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr),
                                               batch_size=args.batch_size, shuffle=True,
                                               drop_last=True, generator=g)
    loader_eval = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xva, yva),
                                              batch_size=args.batch_size)
    updates_per_epoch = len(loader_train)
    lr_scheduler, num_epochs = create_scheduler_v2(
        optimizer, **scheduler_kwargs(args, decreasing_metric=False),
        updates_per_epoch=updates_per_epoch)
    _logger.info(f"Scheduled epochs: {num_epochs}. LR stepped per update.")
    train_loss_fn = nn.CrossEntropyLoss()
    validate_loss_fn = nn.CrossEntropyLoss()

    output_dir = str(out)
    with open(os.path.join(output_dir, "args.yaml"), "w") as f:
        f.write(yaml.safe_dump(args.__dict__, default_flow_style=False))
    saver = CheckpointSaver(model=model, optimizer=optimizer, args=args, model_ema=None,
                            amp_scaler=None, checkpoint_dir=output_dir, recovery_dir=output_dir,
                            decreasing=False, max_history=args.checkpoint_hist)
    if bn_eval:
        model.eval()  # left in eval mode by a sanity evaluation before training
    best_metric, best_epoch, num_updates = None, None, 0
    for epoch in range(num_epochs):
        train_metrics, num_updates = train_one_epoch(
            epoch, model, loader_train, optimizer, train_loss_fn, args, lr_scheduler, num_updates,
            set_train=not bn_eval)
        eval_metrics = validate(model, loader_eval, validate_loss_fn, args)
        lrs = [pg["lr"] for pg in optimizer.param_groups]
        latest_metric = eval_metrics[args.eval_metric]
        update_summary(epoch, train_metrics, eval_metrics,
                       filename=os.path.join(output_dir, "summary.csv"),
                       lr=sum(lrs) / len(lrs), write_header=best_metric is None)
        best_metric, best_epoch = saver.save_checkpoint(epoch, metric=latest_metric)
        lr_scheduler.step(epoch + 1, latest_metric)
        if not math.isfinite(train_metrics["loss"]):
            _logger.info("*** loss is not finite, stopping")
            break
    _logger.info(f"*** Best metric: {best_metric} (epoch {best_epoch})")
    for h in list(logging.root.handlers):
        h.close()
        logging.root.removeHandler(h)


RUNS = {
    "timm_healthy": (dict(), None, [], {}),
    "timm_lr_100x": (
        dict(lr=5.0),
        "SGD lr=5.0, 100x the healthy 0.05 (timm's lr_base 0.1 x 64/256 = 0.025): loss jumps "
        "within the first warmup epoch and accuracy sits at chance (10%)",
        ["S4.1", "O22", "S3.2"], {}),
    "timm_no_decay_split": (
        dict(filter_bias_and_bn=False),
        "create_optimizer_v2(..., weight_decay=5e-4, filter_bias_and_bn=False): one param "
        "group (timm's default is two: 1-d tensors and biases at weight_decay 0), so BatchNorm "
        "weights/biases and the classifier bias are decayed",
        ["S6.1", "O6"], {}),
    "timm_bn_eval_mode": (
        dict(bn_eval=True),
        "model.eval() before the loop and train_one_epoch never calls model.train(): every "
        "BatchNorm uses and keeps its init running stats (mean 0, var 1, num_batches_tracked 0) "
        "while the weights train",
        ["O5"], {}),
}

if __name__ == "__main__":
    made = versions("torch", "timm")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts,
               profile={"framework": "timm", "resumed_at": None, "init_checkpoint": False})
