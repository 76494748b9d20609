"""Healthy image-classification runs built with timm's own training pieces
(create_model / create_optimizer_v2 / create_scheduler_v2 / CheckpointSaver /
update_summary), laid out the way timm's train.py lays out an experiment:
args.yaml, summary.csv, checkpoint-{epoch}.pth.tar, model_best.pth.tar,
last.pth.tar."""
import argparse
import os
import shutil
import tempfile
from collections import OrderedDict

import torch
import torch.nn as nn
import yaml
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
import timm
from timm.data import Mixup
from timm.loss import LabelSmoothingCrossEntropy, SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.utils import AverageMeter, CheckpointSaver, ModelEmaV3, accuracy, update_summary

from common import entry, seed_all, shape_images, versions


def made_by():
    return versions("timm")


def evaluate(model, loader):
    model.eval()
    lm, t1, t5 = AverageMeter(), AverageMeter(), AverageMeter()
    ce = nn.CrossEntropyLoss()
    with torch.no_grad():
        for x, y in loader:
            o = model(x)
            a1, a5 = accuracy(o, y, topk=(1, 3))
            lm.update(ce(o, y).item(), x.size(0)); t1.update(a1.item(), x.size(0)); t5.update(a5.item(), x.size(0))
    model.train()
    return OrderedDict([("loss", lm.avg), ("top1", t1.avg), ("top5", t5.avg)])


def train(out, model_name, model_kw, *, classes=4, size=16, epochs=8, opt="sgd", lr=0.05, wd=1e-4, sched="cosine",
          warmup_epochs=1, smoothing=0.1, mixup=False, ema=False, bs=32, n=768, seed=0, model=None,
          sched_kw=None, opt_kw=None):
    seed_all(seed)
    os.makedirs(out, exist_ok=True)
    args = argparse.Namespace(model=model_name, model_kwargs=model_kw, num_classes=classes, img_size=size,
                              batch_size=bs, epochs=epochs, opt=opt, lr=lr, weight_decay=wd, sched=sched,
                              warmup_epochs=warmup_epochs, smoothing=smoothing, mixup=0.4 if mixup else 0.0,
                              model_ema=ema, seed=seed, pretrained=model is not None, eval_metric="top1",
                              checkpoint_hist=1, output=out)
    with open(os.path.join(out, "args.yaml"), "w") as f:
        yaml.safe_dump({k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}, f)
    if model is None:
        model = timm.create_model(model_name, pretrained=False, num_classes=classes, **model_kw)
    x, y = shape_images(n, size=size, classes=classes, seed=seed)
    xv, yv = shape_images(160, size=size, classes=classes, seed=seed + 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=bs, shuffle=True, drop_last=True)
    vloader = DataLoader(TensorDataset(xv, yv), batch_size=80)
    optimizer = create_optimizer_v2(model, opt=opt, lr=lr, weight_decay=wd, **(opt_kw or {}))
    scheduler, num_epochs = create_scheduler_v2(optimizer, sched=sched, num_epochs=epochs,
                                                warmup_epochs=warmup_epochs, warmup_lr=lr * 0.01, min_lr=lr * 0.01,
                                                updates_per_epoch=len(loader), **(sched_kw or {}))
    mixup_fn = Mixup(mixup_alpha=0.4, label_smoothing=smoothing, num_classes=classes) if mixup else None
    train_loss_fn = SoftTargetCrossEntropy() if mixup else (
        LabelSmoothingCrossEntropy(smoothing) if smoothing else nn.CrossEntropyLoss())
    model_ema = ModelEmaV3(model, decay=0.95) if ema else None
    saver = CheckpointSaver(model=model, optimizer=optimizer, args=args, model_ema=model_ema, checkpoint_dir=out,
                            recovery_dir=out, decreasing=False, max_history=1)
    losses = []
    for epoch in range(num_epochs):
        lm = AverageMeter()
        num_updates = epoch * len(loader)
        for xb, yb in loader:
            if mixup_fn is not None:
                xb, yb = mixup_fn(xb, yb)
            loss = train_loss_fn(model(xb), yb)
            optimizer.zero_grad(); loss.backward(); optimizer.step()
            num_updates += 1
            scheduler.step_update(num_updates=num_updates, metric=lm.avg)
            if model_ema is not None:
                model_ema.update(model, step=num_updates)
            lm.update(loss.item(), xb.size(0))
        train_metrics = OrderedDict([("loss", lm.avg)])
        eval_metrics = evaluate(model, vloader)
        if model_ema is not None:
            ema_metrics = evaluate(model_ema.module, vloader)
            eval_metrics = ema_metrics if ema_metrics["top1"] >= eval_metrics["top1"] else eval_metrics
        lrs = [g["lr"] for g in optimizer.param_groups]
        update_summary(epoch, train_metrics, eval_metrics, filename=os.path.join(out, "summary.csv"),
                       lr=sum(lrs) / len(lrs), write_header=epoch == 0)
        saver.save_checkpoint(epoch, metric=eval_metrics["top1"])
        scheduler.step(epoch + 1, eval_metrics["top1"])
        losses.append(lm.avg)
    return model, losses


def check(out, losses, ratio=0.8):
    assert losses[-1] < ratio * losses[0], f"{out}: {losses[0]:.3f} -> {losses[-1]:.3f}"


def run_resnet10t_sgd_cosine(out):
    _, ls = train(out, "resnet10t", dict(channels=(4, 8, 8, 12), stem_width=4), opt="momentum", lr=0.1,
                  sched="cosine", epochs=10, seed=1)
    check(out, ls)
    return entry(made_by(), "classification", "scratch", "timm", log_interval=None, optimizer="sgd",
                 schedule="cosine", accum_steps=1)


def run_vit_adamw_mixup_ema(out):
    _, ls = train(out, "test_vit", dict(embed_dim=12, depth=2, num_heads=2, img_size=16, patch_size=4),
                  classes=5, opt="adamw", lr=3e-3, wd=0.05, sched="cosine", warmup_epochs=2, mixup=True, ema=True,
                  epochs=12, seed=2)
    check(out, ls, ratio=0.9)
    return entry(made_by(), "classification", "scratch", "timm", log_interval=None, optimizer="adamw",
                 schedule="cosine", accum_steps=1)


def run_convnext_lamb_step(out):
    _, ls = train(out, "convnext_atto", dict(dims=(4, 8, 8, 12), depths=(1, 1, 1, 1)), size=32, opt="lamb",
                  lr=1.5e-2, wd=0.02, sched="step", warmup_epochs=0, epochs=10, seed=3, n=512,
                  sched_kw=dict(decay_epochs=3, decay_rate=0.5))
    check(out, ls)
    return entry(made_by(), "classification", "scratch", "timm", log_interval=None, optimizer="lamb",
                 schedule="step", accum_steps=1)


def run_resnet_finetune_pretrained_file(out):
    tmp = tempfile.mkdtemp(prefix="heldout_timm_")
    try:
        kw = dict(channels=(4, 8, 8, 12), stem_width=4)
        base, _ = train(os.path.join(tmp, "pre"), "resnet10t", kw, classes=4, opt="adamw", lr=5e-3, epochs=4,
                        seed=10)
        torch.save(base.state_dict(), os.path.join(tmp, "resnet10t_tiny.pth"))
        model = timm.create_model("resnet10t", pretrained=True, num_classes=6, **kw,
                                  pretrained_cfg_overlay=dict(file=os.path.join(tmp, "resnet10t_tiny.pth"),
                                                              num_classes=4))
        train(out, "resnet10t", kw, classes=6, opt="adamw", lr=1e-3, sched="cosine", warmup_epochs=0,
              epochs=5, seed=11, model=model, n=480)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry(made_by(), "classification", "pretrained", "timm", log_interval=None, optimizer="adamw",
                 schedule="cosine", accum_steps=1)


RUNS = [
    ("timm_resnet10t_sgd_cosine_label_smoothing", run_resnet10t_sgd_cosine),
    ("timm_vit_adamw_mixup_ema", run_vit_adamw_mixup_ema),
    ("timm_convnext_atto_lamb_step", run_convnext_lamb_step),
    ("timm_resnet10t_finetune_local_pretrained", run_resnet_finetune_pretrained_file),
]


def main(out_dir, only=None):
    answers = {}
    for name, fn in RUNS:
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        answers[name] = fn(d)
        print("done", name, flush=True)
    return answers
