"""train_one_epoch / evaluate in the style of torchvision/references/detection/engine.py."""
import contextlib
import copy
import io
import math
import sys
import time

import numpy as np
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import utils


def train_one_epoch(model, optimizer, data_loader, device, epoch, print_freq):
    model.train()
    metric_logger = utils.MetricLogger(delimiter="  ")
    metric_logger.add_meter("lr", utils.SmoothedValue(window_size=1, fmt="{value:.6f}"))
    header = f"Epoch: [{epoch}]"

    lr_scheduler = None
    if epoch == 0:
        warmup_factor = 1.0 / 1000
        warmup_iters = min(1000, len(data_loader) - 1)
        lr_scheduler = torch.optim.lr_scheduler.LinearLR(
            optimizer, start_factor=warmup_factor, total_iters=warmup_iters)

    for images, targets in metric_logger.log_every(data_loader, print_freq, header):
        images = list(image.to(device) for image in images)
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        loss_value = losses.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            print(loss_dict)
            sys.exit(1)
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        if lr_scheduler is not None:
            lr_scheduler.step()
        metric_logger.update(loss=losses, **loss_dict)
        metric_logger.update(lr=optimizer.param_groups[0]["lr"])
    return metric_logger


def convert_to_coco_api(ds):
    coco_ds = COCO()
    ann_id = 1
    dataset = {"images": [], "categories": [], "annotations": []}
    categories = set()
    for img_idx in range(len(ds)):
        img, targets = ds[img_idx]
        image_id = int(targets["image_id"])
        dataset["images"].append({"id": image_id, "height": img.shape[-2], "width": img.shape[-1]})
        bboxes = targets["boxes"].clone()
        bboxes[:, 2:] -= bboxes[:, :2]
        for bbox, label, area, iscrowd in zip(bboxes.tolist(), targets["labels"].tolist(),
                                              targets["area"].tolist(), targets["iscrowd"].tolist()):
            dataset["annotations"].append({"image_id": image_id, "bbox": bbox, "category_id": label,
                                           "area": area, "iscrowd": iscrowd, "id": ann_id})
            categories.add(label)
            ann_id += 1
    dataset["categories"] = [{"id": i} for i in sorted(categories)]
    coco_ds.dataset = dataset
    coco_ds.createIndex()
    return coco_ds


class CocoEvaluator:
    def __init__(self, coco_gt):
        self.coco_gt = copy.deepcopy(coco_gt)
        self.results = []
        self.img_ids = []

    def update(self, predictions):
        for image_id, pred in predictions.items():
            self.img_ids.append(image_id)
            boxes = pred["boxes"].clone()
            boxes[:, 2:] -= boxes[:, :2]
            for b, s, l in zip(boxes.tolist(), pred["scores"].tolist(), pred["labels"].tolist()):
                self.results.append({"image_id": image_id, "category_id": l, "bbox": b, "score": s})

    def accumulate_and_summarize(self):
        with contextlib.redirect_stdout(io.StringIO()):
            if self.results:
                coco_dt = self.coco_gt.loadRes(self.results)
            else:
                coco_dt = COCO()
                coco_dt.dataset = {"images": list(self.coco_gt.dataset["images"]), "annotations": [],
                                   "categories": copy.deepcopy(self.coco_gt.dataset["categories"])}
                coco_dt.createIndex()
            self.coco_eval = COCOeval(self.coco_gt, coco_dt, iouType="bbox")
            self.coco_eval.params.imgIds = list(np.unique(self.img_ids))
            self.coco_eval.evaluate()
        self.coco_eval.accumulate()
        print("IoU metric: bbox")
        self.coco_eval.summarize()
        return self.coco_eval.stats


@torch.inference_mode()
def evaluate(model, data_loader, device, coco_gt=None):
    cpu_device = torch.device("cpu")
    model.eval()
    metric_logger = utils.MetricLogger(delimiter="  ")
    header = "Test:"
    coco = coco_gt if coco_gt is not None else convert_to_coco_api(data_loader.dataset)
    coco_evaluator = CocoEvaluator(coco)
    for images, targets in metric_logger.log_every(data_loader, 100, header):
        images = list(img.to(device) for img in images)
        model_time = time.time()
        outputs = model(images)
        outputs = [{k: v.to(cpu_device) for k, v in t.items()} for t in outputs]
        model_time = time.time() - model_time
        res = {int(target["image_id"]): output for target, output in zip(targets, outputs)}
        evaluator_time = time.time()
        coco_evaluator.update(res)
        evaluator_time = time.time() - evaluator_time
        metric_logger.update(model_time=model_time, evaluator_time=evaluator_time)
    print("Averaged stats:", metric_logger)
    if not coco_evaluator.results:
        print("No detections produced")
    coco_evaluator.accumulate_and_summarize()
    return coco_evaluator
