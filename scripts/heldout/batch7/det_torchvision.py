"""torchvision Faster R-CNN trained from scratch on tiny synthetic boxes, plain loop.

Layout (what a typical hand-written detection loop leaves behind):
  config.yaml, train_log.jsonl (one line per iteration), eval_log.jsonl (one line
  per epoch, COCO mAP via torchmetrics), checkpoints/checkpoint_epoch{N}.pth,
  model_final.pth, stdout.log
variants: healthy (SGD lr 0.02, momentum 0.9, 10-iter warmup, clip 10) | lr100x (SGD lr 2.0,
everything else equal: loss explodes to ~1e5, then the RPN collapses and mAP stays 0)
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import yaml  # noqa: E402
from torchvision.models.detection import FasterRCNN  # noqa: E402
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead  # noqa: E402
from torchvision.models.detection.anchor_utils import AnchorGenerator  # noqa: E402
from torchvision.ops import MultiScaleRoIAlign  # noqa: E402
from torchmetrics.detection import MeanAveragePrecision  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "lr100x"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
os.makedirs(os.path.join(out, "checkpoints"))
log_out = open(os.path.join(out, "stdout.log"), "w")


def say(msg):
    print(msg, flush=True)
    log_out.write(msg + "\n")
    log_out.flush()


cfg = {
    "model": {"arch": "fasterrcnn", "backbone": "tiny_conv3_stride4", "num_classes": 3,
              "anchor_sizes": [12, 24, 40], "aspect_ratios": [0.5, 1.0, 2.0],
              "representation_size": 128, "min_size": 96, "max_size": 96},
    "data": {"kind": "synthetic_rectangles", "img_size": 96, "train_images": 96, "val_images": 32,
             "classes": ["__background__", "red_box", "blue_box"]},
    "solver": {"optimizer": "sgd", "momentum": 0.9, "base_lr": 0.02 if args.variant == "healthy" else 2.0,
               "clip_grad_norm": 10.0,
               "weight_decay": 1e-4, "warmup_iters": 10, "warmup_factor": 0.001,
               "batch_size": 4, "epochs": 8, "lr_schedule": "constant_after_warmup"},
    "seed": 0,
    "output_dir": out,
}
with open(os.path.join(out, "config.yaml"), "w") as f:
    yaml.safe_dump(cfg, f, sort_keys=False)


def make_sample(g, S=96):
    img = torch.rand(3, S, S, generator=g) * 0.2
    n = int(torch.randint(1, 4, (1,), generator=g))
    boxes, labels = [], []
    for _ in range(n):
        w = int(torch.randint(12, 36, (1,), generator=g))
        h = int(torch.randint(12, 36, (1,), generator=g))
        x = int(torch.randint(0, S - w, (1,), generator=g))
        y = int(torch.randint(0, S - h, (1,), generator=g))
        c = int(torch.randint(1, 3, (1,), generator=g))
        color = torch.tensor([0.9, 0.2, 0.2]) if c == 1 else torch.tensor([0.2, 0.3, 0.9])
        img[:, y:y + h, x:x + w] = color[:, None, None] + 0.05 * torch.rand(3, h, w, generator=g)
        boxes.append([x, y, x + w, y + h])
        labels.append(c)
    return img, {"boxes": torch.tensor(boxes, dtype=torch.float32), "labels": torch.tensor(labels)}


g = torch.Generator().manual_seed(1)
train = [make_sample(g) for _ in range(cfg["data"]["train_images"])]
val = [make_sample(g) for _ in range(cfg["data"]["val_images"])]

backbone = nn.Sequential(
    nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
    nn.Conv2d(32, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(),
)
backbone.out_channels = 32
model = FasterRCNN(
    backbone,
    rpn_anchor_generator=AnchorGenerator(sizes=((12, 24, 40),), aspect_ratios=((0.5, 1.0, 2.0),)),
    box_roi_pool=MultiScaleRoIAlign(featmap_names=["0"], output_size=7, sampling_ratio=2),
    min_size=96, max_size=96, image_mean=[0.5] * 3, image_std=[0.25] * 3,
    rpn_batch_size_per_image=64, box_batch_size_per_image=64,
    rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=100,
    rpn_pre_nms_top_n_test=300, rpn_post_nms_top_n_test=100,
    box_head=TwoMLPHead(32 * 7 * 7, 128), box_predictor=FastRCNNPredictor(128, 3),
    num_classes=None,
)
sv = cfg["solver"]
opt = torch.optim.SGD(model.parameters(), lr=sv["base_lr"], momentum=sv["momentum"],
                      weight_decay=sv["weight_decay"])


def warmup(it):
    if it >= sv["warmup_iters"]:
        return 1.0
    a = it / sv["warmup_iters"]
    return sv["warmup_factor"] * (1 - a) + a


sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup)
say(f"model params: {sum(p.numel() for p in model.parameters())}")
say(f"config: {json.dumps(cfg['solver'])}")

tlog = open(os.path.join(out, "train_log.jsonl"), "w")
elog = open(os.path.join(out, "eval_log.jsonl"), "w")
it = 0
t0 = time.time()
bs = sv["batch_size"]
for ep in range(sv["epochs"]):
    model.train()
    perm = torch.randperm(len(train))
    run = 0.0
    nb = 0
    for b in range(0, len(train), bs):
        batch = [train[i] for i in perm[b:b + bs]]
        ld = model([x for x, _ in batch], [t for _, t in batch])
        loss = sum(ld.values())
        opt.zero_grad()
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), sv["clip_grad_norm"])
        opt.step()
        sched.step()
        it += 1
        rec = {"iter": it, "epoch": ep, "lr": opt.param_groups[0]["lr"], "loss": round(loss.item(), 5),
               "grad_norm": round(float(gnorm), 4)}
        rec.update({k: round(v.item(), 5) for k, v in ld.items()})
        rec["time"] = round(time.time() - t0, 3)
        tlog.write(json.dumps(rec) + "\n")
        tlog.flush()
        run += loss.item()
        nb += 1
        if it % 8 == 0:
            say(f"Epoch: [{ep}] [{it}] lr: {rec['lr']:.6f} loss: {rec['loss']:.4f} "
                + " ".join(f"{k}: {rec[k]:.4f}" for k in ld))
    model.eval()
    metric = MeanAveragePrecision(iou_type="bbox")
    with torch.no_grad():
        for b in range(0, len(val), 8):
            batch = val[b:b + 8]
            preds = model([x for x, _ in batch])
            metric.update(preds, [t for _, t in batch])
    m = metric.compute()
    erec = {"epoch": ep, "iter": it, "train_loss_epoch": round(run / nb, 5),
            "bbox_mAP": round(float(m["map"]), 5), "bbox_mAP_50": round(float(m["map_50"]), 5),
            "bbox_mAR_100": round(float(m["mar_100"]), 5)}
    elog.write(json.dumps(erec) + "\n")
    elog.flush()
    say(f"Epoch {ep} done: train_loss {erec['train_loss_epoch']:.4f} mAP {erec['bbox_mAP']:.4f} "
        f"mAP50 {erec['bbox_mAP_50']:.4f}")
    if ep in (3, sv["epochs"] - 1):
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "lr_scheduler": sched.state_dict(), "epoch": ep, "iter": it, "config": cfg},
                   os.path.join(out, "checkpoints", f"checkpoint_epoch{ep}.pth"))
torch.save(model.state_dict(), os.path.join(out, "model_final.pth"))
say(f"Training time {time.time() - t0:.1f}s")
