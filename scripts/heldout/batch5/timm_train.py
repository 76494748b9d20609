"""A trimmed timm train.py: timm model (test_efficientnet, BN), timm optimizer/scheduler factories,
timm.utils.CheckpointSaver (checkpoint-N.pth.tar, last.pth.tar, model_best.pth.tar), update_summary
(summary.csv) and args.yaml in the experiment folder, exactly like `train.py --output <run>`.
usage: timm_train.py RUNS NAME finetune   -> pretrain on 24px shapes (saved under pretrain/), fine-tune on a
                                            small noisier 32px set from that checkpoint
       timm_train.py RUNS NAME scratch    -> from scratch on the textured-shapes set"""
import os, sys, time, argparse
sys.path.insert(0, os.path.dirname(__file__))
import common
from collections import OrderedDict
import yaml
import numpy as np
import torch
import torch.nn as nn
import timm
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.loss import LabelSmoothingCrossEntropy
from timm.utils import CheckpointSaver, update_summary, AverageMeter, accuracy, get_outdir, ModelEmaV3

name, mode = sys.argv[2], sys.argv[3]
out = common.run_dir(name)
common.seed_all(0)


def loaders(n, size, noise, seed, bs):
    x, y = common.shape_images(n, size=size, seed=seed, noise=noise)
    x, y = common.to_tensor_images(x), torch.tensor(y)
    nv = n // 5
    tr = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[nv:], y[nv:]), batch_size=bs, shuffle=True, drop_last=True)
    va = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:nv], y[:nv]), batch_size=256)
    return tr, va


def train(args, output_dir, model, train_loader, val_loader, sched_kwargs=None):
    with open(os.path.join(output_dir, "args.yaml"), "w") as f:
        f.write(yaml.safe_dump(vars(args), default_flow_style=False))
    optimizer = create_optimizer_v2(model, opt=args.opt, lr=args.lr, weight_decay=args.weight_decay, momentum=args.momentum)
    updates_per_epoch = len(train_loader)
    lr_scheduler, num_epochs = create_scheduler_v2(optimizer, sched=args.sched, num_epochs=args.epochs,
                                                   warmup_epochs=args.warmup_epochs, warmup_lr=args.warmup_lr,
                                                   min_lr=args.min_lr, updates_per_epoch=updates_per_epoch,
                                                   **(sched_kwargs if sched_kwargs is not None else
                                                      dict(step_on_epochs=not args.sched_on_updates)))
    model_ema = ModelEmaV3(model, decay=args.model_ema_decay) if args.model_ema else None
    train_loss_fn = LabelSmoothingCrossEntropy(smoothing=args.smoothing)
    validate_loss_fn = nn.CrossEntropyLoss()
    saver = CheckpointSaver(model=model, optimizer=optimizer, args=args, model_ema=model_ema,
                            checkpoint_dir=output_dir, recovery_dir=output_dir, decreasing=False,
                            max_history=args.checkpoint_hist)
    best_metric = None
    for epoch in range(num_epochs):
        model.train()
        losses = AverageMeter()
        num_updates = epoch * updates_per_epoch
        for xb, yb in train_loader:
            loss = train_loss_fn(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if model_ema is not None:
                model_ema.update(model, step=num_updates)
            num_updates += 1
            losses.update(loss.item(), xb.size(0))
            lr_scheduler.step_update(num_updates=num_updates, metric=losses.avg)
        if not args.sched_on_updates:
            lr_scheduler.step(epoch + 1, losses.avg)
        lrl = [g["lr"] for g in optimizer.param_groups]
        train_metrics = OrderedDict([("loss", losses.avg)])
        eval_model = model_ema if model_ema is not None else model
        eval_model.eval()
        lm, t1 = AverageMeter(), AverageMeter()
        with torch.no_grad():
            for xb, yb in val_loader:
                o = eval_model(xb)
                lm.update(validate_loss_fn(o, yb).item(), xb.size(0))
                t1.update(accuracy(o, yb, topk=(1,))[0].item(), xb.size(0))
        eval_metrics = OrderedDict([("loss", lm.avg), ("top1", t1.avg)])
        update_summary(epoch, train_metrics, eval_metrics, filename=os.path.join(output_dir, "summary.csv"),
                       lr=sum(lrl) / len(lrl), write_header=best_metric is None)
        best_metric, best_epoch = saver.save_checkpoint(epoch, metric=eval_metrics["top1"])
        print(f"epoch {epoch} train_loss {losses.avg:.4f} val_loss {lm.avg:.4f} top1 {t1.avg:.2f} lr {lrl[0]:.5f}", flush=True)
    print("*** Best metric: {0} (epoch {1})".format(best_metric, best_epoch))
    return os.path.join(output_dir, "model_best.pth.tar")


base = dict(model="test_efficientnet", opt="sgd", momentum=0.9, weight_decay=5e-4, sched="cosine", min_lr=1e-5,
            warmup_lr=1e-4, smoothing=0.1, checkpoint_hist=2, model_ema=False, model_ema_decay=0.998, batch_size=64,
            pretrained=False, initial_checkpoint="", output=os.path.dirname(out), experiment=name)
if mode == "finetune":
    pre_dir = get_outdir(out, "pretrain")
    pargs = argparse.Namespace(**{**base, "lr": 0.05, "epochs": 6, "warmup_epochs": 1, "num_classes": 4,
                                  "img_size": 24, "sched_on_updates": True, "checkpoint_hist": 1,
                                  "output": out, "experiment": "pretrain"})
    tr, va = loaders(2500, 24, 20, 0, 64)
    m = timm.create_model("test_efficientnet", num_classes=4)
    best = train(pargs, pre_dir, m, tr, va)
    args = argparse.Namespace(**{**base, "lr": 0.02, "epochs": 12, "warmup_epochs": 1, "num_classes": 4,
                                 "img_size": 32, "sched_on_updates": True, "pretrained": True,
                                 "initial_checkpoint": best, "model_ema": True, "model_ema_decay": 0.99,
                                 "batch_size": 32})
    tr, va = loaders(600, 32, 45, 5, 32)
    model = timm.create_model("test_efficientnet", pretrained=True, num_classes=5,
                              pretrained_cfg_overlay=dict(file=best, num_classes=4))
    model.reset_classifier(4)
    train(args, out, model, tr, va)
else:
    args = argparse.Namespace(**{**base, "lr": 0.05, "epochs": 20, "warmup_epochs": 0, "num_classes": 4,
                                 "img_size": 24, "sched_on_updates": True})
    tr, va = loaders(3000, 24, 40, 7, 64)
    model = timm.create_model("test_efficientnet", num_classes=4)
    train(args, out, model, tr, va, sched_kwargs={})
