r"""Faster R-CNN training on synthetic shapes, following torchvision/references/detection/train.py.

  python train.py --output-dir RUN --epochs 6 --lr 0.02 | tee RUN/train.log
"""
import datetime
import os
import time

import torch
import torch.nn as nn
import torchvision
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign

import utils
from engine import convert_to_coco_api, evaluate, train_one_epoch
from synthetic import SyntheticShapes


def get_args_parser(add_help=True):
    import argparse
    parser = argparse.ArgumentParser(description="PyTorch Detection Training", add_help=add_help)
    parser.add_argument("--data-path", default="synthetic://shapes", type=str, help="dataset path")
    parser.add_argument("--dataset", default="synthetic_shapes", type=str)
    parser.add_argument("--model", default="fasterrcnn_tinycnn", type=str, help="model name")
    parser.add_argument("--device", default="cpu", type=str)
    parser.add_argument("-b", "--batch-size", default=4, type=int, help="images per gpu")
    parser.add_argument("--epochs", default=6, type=int, metavar="N")
    parser.add_argument("-j", "--workers", default=0, type=int, metavar="N")
    parser.add_argument("--opt", default="sgd", type=str)
    parser.add_argument("--lr", default=0.02, type=float)
    parser.add_argument("--momentum", default=0.9, type=float, metavar="M")
    parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, metavar="W", dest="weight_decay")
    parser.add_argument("--lr-scheduler", default="multisteplr", type=str)
    parser.add_argument("--lr-steps", default=[4, 5], nargs="+", type=int)
    parser.add_argument("--lr-gamma", default=0.1, type=float)
    parser.add_argument("--print-freq", default=20, type=int)
    parser.add_argument("--output-dir", default=".", type=str)
    parser.add_argument("--resume", default="", type=str)
    parser.add_argument("--start_epoch", default=0, type=int)
    parser.add_argument("--num-classes", default=4, type=int, help="including background")
    parser.add_argument("--train-size", default=400, type=int)
    parser.add_argument("--val-size", default=50, type=int)
    parser.add_argument("--image-size", default=96, type=int)
    parser.add_argument("--box-format", default="xyxy", choices=["xyxy", "xywh"])
    parser.add_argument("--label-offset", default=0, type=int)
    parser.add_argument("--seed", default=0, type=int)
    return parser


def tiny_backbone():
    def block(i, o):
        return [nn.Conv2d(i, o, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
    body = nn.Sequential(*block(3, 16), *block(16, 32), *block(32, 64))  # stride 8
    body.out_channels = 64
    return body


def get_model(args):
    backbone = tiny_backbone()
    anchor_generator = AnchorGenerator(sizes=((16, 32, 48),), aspect_ratios=((0.5, 1.0, 2.0),))
    roi_pooler = MultiScaleRoIAlign(featmap_names=["0"], output_size=7, sampling_ratio=2)
    box_head = TwoMLPHead(64 * 7 * 7, 128)
    box_predictor = FastRCNNPredictor(128, args.num_classes)
    return FasterRCNN(
        backbone, num_classes=None, min_size=args.image_size, max_size=args.image_size,
        image_mean=[0.3, 0.3, 0.3], image_std=[0.3, 0.3, 0.3],
        rpn_anchor_generator=anchor_generator, box_roi_pool=roi_pooler,
        box_head=box_head, box_predictor=box_predictor,
        rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=100,
        rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=50,
        rpn_batch_size_per_image=64, box_batch_size_per_image=64, box_detections_per_img=20)


def main(args):
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    if args.output_dir:
        utils.mkdir(args.output_dir)
    print(args)
    device = torch.device(args.device)

    print("Loading data")
    dataset = SyntheticShapes(args.train_size, args.image_size, seed=1, box_format=args.box_format,
                              label_offset=args.label_offset)
    dataset_test = SyntheticShapes(args.val_size, args.image_size, seed=2, box_format=args.box_format,
                                   label_offset=args.label_offset)

    print("Creating data loaders")
    train_sampler = torch.utils.data.RandomSampler(dataset)
    test_sampler = torch.utils.data.SequentialSampler(dataset_test)
    train_batch_sampler = torch.utils.data.BatchSampler(train_sampler, args.batch_size, drop_last=True)
    data_loader = torch.utils.data.DataLoader(dataset, batch_sampler=train_batch_sampler,
                                              num_workers=args.workers, collate_fn=utils.collate_fn)
    data_loader_test = torch.utils.data.DataLoader(dataset_test, batch_size=1, sampler=test_sampler,
                                                   num_workers=args.workers, collate_fn=utils.collate_fn)

    print("Creating model")
    model = get_model(args)
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=args.lr_steps, gamma=args.lr_gamma)

    coco_gt = convert_to_coco_api(dataset_test)

    print("Start training")
    start_time = time.time()
    for epoch in range(args.start_epoch, args.epochs):
        train_one_epoch(model, optimizer, data_loader, device, epoch, args.print_freq)
        lr_scheduler.step()
        if args.output_dir:
            checkpoint = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "lr_scheduler": lr_scheduler.state_dict(),
                "args": args,
                "epoch": epoch,
            }
            utils.save_on_master(checkpoint, os.path.join(args.output_dir, f"model_{epoch}.pth"))
            utils.save_on_master(checkpoint, os.path.join(args.output_dir, "checkpoint.pth"))
        # evaluate after every epoch
        evaluate(model, data_loader_test, device=device, coco_gt=coco_gt)

    total_time = time.time() - start_time
    total_time_str = str(datetime.timedelta(seconds=int(total_time)))
    print(f"Training time {total_time_str}")


if __name__ == "__main__":
    args = get_args_parser().parse_args()
    main(args)
