r"""Image classification on synthetic data, following torchvision/references/classification/train.py.

  python train.py --model shufflenet_v2_x0_5 --output-dir RUN --epochs 8 | tee RUN/train.log
"""
import datetime
import math
import os
import time

import numpy as np
import torch
import torch.utils.data
import torchvision
from torch import nn

import utils


class SyntheticPatterns(torch.utils.data.Dataset):
    """10 classes = 5 colour families x 2 stripe orientations, on noise. Deterministic per index."""
    HUES = [(0.9, 0.2, 0.2), (0.2, 0.85, 0.2), (0.2, 0.3, 0.9), (0.9, 0.85, 0.2), (0.7, 0.2, 0.8)]

    def __init__(self, n, size=32, seed=0, train=True, missing_class0=False):
        self.n, self.size, self.seed, self.train = n, size, seed, train
        # missing_class0 emulates ImageFolder on a split whose "c0" folder is absent: the remaining
        # classes are re-indexed 0..8, so index k in this split means class c(k+1) of the train split.
        self.missing_class0 = missing_class0
        self.classes = [f"c{i}" for i in range(1 if missing_class0 else 0, 10)]

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 7919 + idx)
        label = int(rng.integers(1, 10)) if self.missing_class0 else int(rng.integers(0, 10))
        hue, orient = label // 2, label % 2
        s = self.size
        col = np.array(self.HUES[hue], dtype=np.float32) + rng.normal(0, 0.12, 3).astype(np.float32)
        period = rng.integers(4, 9)
        phase = rng.integers(0, period)
        coords = np.arange(s)
        stripe = (((coords + phase) // (period // 2)) % 2).astype(np.float32)
        mask = stripe[None, :].repeat(s, 0) if orient == 0 else stripe[:, None].repeat(s, 1)
        img = rng.uniform(0, 0.5, (3, s, s)).astype(np.float32) * 0.6
        img = img + mask[None] * col[:, None, None] * 0.7 + rng.normal(0, 0.15, (3, s, s)).astype(np.float32)
        img = torch.from_numpy(np.clip(img, 0, 1))
        if self.train:  # RandomCrop(padding=4) + RandomHorizontalFlip, like a small-image preset
            img = nn.functional.pad(img, (4, 4, 4, 4), mode="reflect")
            x, y = rng.integers(0, 9, size=2)
            img = img[:, y:y + s, x:x + s]
            if rng.random() < 0.5:
                img = img.flip(-1)
        img = (img - 0.4) / 0.25
        if self.missing_class0:
            label -= 1  # ImageFolder re-indexing of the 9 folders present
        return img, label


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args):
    if not args.skip_train_mode:
        model.train()
    metric_logger = utils.MetricLogger(delimiter="  ")
    metric_logger.add_meter("lr", utils.SmoothedValue(window_size=1, fmt="{value}"))
    metric_logger.add_meter("img/s", utils.SmoothedValue(window_size=10, fmt="{value}"))
    header = f"Epoch: [{epoch}]"
    for i, (image, target) in enumerate(metric_logger.log_every(data_loader, args.print_freq, header)):
        start_time = time.time()
        image, target = image.to(device), target.to(device)
        output = model(image)
        optimizer.zero_grad()
        loss = criterion(output, target)
        loss.backward()
        if args.clip_grad_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        optimizer.step()
        acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))
        batch_size = image.shape[0]
        metric_logger.update(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
        metric_logger.meters["acc1"].update(acc1.item(), n=batch_size)
        metric_logger.meters["acc5"].update(acc5.item(), n=batch_size)
        metric_logger.meters["img/s"].update(batch_size / (time.time() - start_time))


def evaluate(model, criterion, data_loader, device, print_freq=100, log_suffix=""):
    model.eval()
    metric_logger = utils.MetricLogger(delimiter="  ")
    header = f"Test: {log_suffix}"
    with torch.inference_mode():
        for image, target in metric_logger.log_every(data_loader, print_freq, header):
            image, target = image.to(device), target.to(device)
            output = model(image)
            loss = criterion(output, target)
            acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))
            batch_size = image.shape[0]
            metric_logger.update(loss=loss.item())
            metric_logger.meters["acc1"].update(acc1.item(), n=batch_size)
            metric_logger.meters["acc5"].update(acc5.item(), n=batch_size)
    print(f"{header} Acc@1 {metric_logger.acc1.global_avg:.3f} Acc@5 {metric_logger.acc5.global_avg:.3f}")
    return metric_logger.acc1.global_avg


def main(args):
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    if args.output_dir:
        utils.mkdir(args.output_dir)
    print(args)
    device = torch.device(args.device)

    print("Loading data")
    print("Loading training data")
    st = time.time()
    dataset = SyntheticPatterns(args.train_size, args.image_size, seed=1, train=True)
    print("Took", time.time() - st)
    print("Loading validation data")
    dataset_test = SyntheticPatterns(args.val_size, args.image_size, seed=2, train=False,
                                     missing_class0=args.val_missing_class0)
    print("Creating data loaders")
    train_sampler = torch.utils.data.RandomSampler(dataset)
    test_sampler = torch.utils.data.SequentialSampler(dataset_test)
    data_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=train_sampler,
                                              num_workers=args.workers)
    data_loader_test = torch.utils.data.DataLoader(dataset_test, batch_size=args.batch_size,
                                                   sampler=test_sampler, num_workers=args.workers)

    print("Creating model")
    model = torchvision.models.get_model(args.model, weights=None, num_classes=len(dataset.classes))
    model.to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    main_lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs - args.lr_warmup_epochs)
    if args.lr_warmup_epochs > 0:
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=args.lr_warmup_decay,
                                                   total_iters=args.lr_warmup_epochs)
        lr_scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, main_lr_scheduler],
                                                             milestones=[args.lr_warmup_epochs])
    else:
        lr_scheduler = main_lr_scheduler

    print("Start training")
    start_time = time.time()
    for epoch in range(args.start_epoch, args.epochs):
        train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args)
        lr_scheduler.step()
        evaluate(model, criterion, data_loader_test, device=device)
        if args.output_dir:
            checkpoint = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "lr_scheduler": lr_scheduler.state_dict(),
                "epoch": epoch,
                "args": args,
            }
            utils.save_on_master(checkpoint, os.path.join(args.output_dir, f"model_{epoch}.pth"))
            utils.save_on_master(checkpoint, os.path.join(args.output_dir, "checkpoint.pth"))
    total_time = time.time() - start_time
    print(f"Training time {str(datetime.timedelta(seconds=int(total_time)))}")


def get_args_parser(add_help=True):
    import argparse
    parser = argparse.ArgumentParser(description="PyTorch Classification Training", add_help=add_help)
    parser.add_argument("--data-path", default="synthetic://patterns", type=str)
    parser.add_argument("--model", default="shufflenet_v2_x0_5", type=str)
    parser.add_argument("--device", default="cpu", type=str)
    parser.add_argument("-b", "--batch-size", default=64, type=int)
    parser.add_argument("--epochs", default=8, type=int)
    parser.add_argument("-j", "--workers", default=0, type=int)
    parser.add_argument("--opt", default="sgd", type=str)
    parser.add_argument("--lr", default=0.1, type=float)
    parser.add_argument("--momentum", default=0.9, type=float)
    parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
    parser.add_argument("--label-smoothing", default=0.0, type=float)
    parser.add_argument("--lr-scheduler", default="cosineannealinglr", type=str)
    parser.add_argument("--lr-warmup-epochs", default=1, type=int)
    parser.add_argument("--lr-warmup-method", default="linear", type=str)
    parser.add_argument("--lr-warmup-decay", default=0.1, type=float)
    parser.add_argument("--clip-grad-norm", default=None, type=float)
    parser.add_argument("--print-freq", default=10, type=int)
    parser.add_argument("--output-dir", default=".", type=str)
    parser.add_argument("--start-epoch", default=0, type=int)
    parser.add_argument("--train-size", default=1280, type=int)
    parser.add_argument("--val-size", default=512, type=int)
    parser.add_argument("--image-size", default=32, type=int)
    parser.add_argument("--skip-train-mode", action="store_true")
    parser.add_argument("--val-missing-class0", action="store_true")
    parser.add_argument("--seed", default=0, type=int)
    return parser


if __name__ == "__main__":
    main(get_args_parser().parse_args())
