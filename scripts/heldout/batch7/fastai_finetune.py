"""fastai: fine_tune a small CNN whose body was pretrained on a related synthetic task.

fine_tune(4, freeze_epochs=2): the body is frozen (only the new head + BN train) for two
one-cycle epochs, then unfrozen and trained 4 more with discriminative LRs.
CSVLogger(append=True) -> history.csv holds both fits (two header lines, epoch restarts at 0).
SaveModelCallback -> models/best.pth (+ learn.save -> models/final.pth); pretrained/body.pth is the
body checkpoint from the short pretraining step.
variants: healthy | shuffled_train_labels (training labels permuted across examples, validation
labels correct; ~25% of train labels stay right by chance, so a little signal remains)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "shuffled_train_labels"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from fastai.callback.all import CSVLogger, SaveModelCallback  # noqa: E402
from fastai.data.core import DataLoaders  # noqa: E402
from fastai.data.load import DataLoader  # noqa: E402
from fastai.learner import Learner  # noqa: E402
from fastai.losses import CrossEntropyLossFlat  # noqa: E402
from fastai.metrics import accuracy  # noqa: E402
from fastai.torch_core import set_seed  # noqa: E402
from shapes import dataset  # noqa: E402

set_seed(0, reproducible=True)


def body():
    def blk(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*blk(3, 16), *blk(16, 32), *blk(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten())


# ---- 1) "pretraining" on shape identity (4 filled shapes); produces the body checkpoint
rng = np.random.default_rng(0)
pre_classes = [("square", True), ("circle", True), ("triangle", True), ("cross", True)]
pre = dataset(rng, 1536, pre_classes)
pre_model = nn.Sequential(body(), nn.Linear(64, 4))
popt = torch.optim.Adam(pre_model.parameters(), 3e-3)
for ep in range(3):
    perm = torch.randperm(len(pre))
    for b in range(0, len(pre), 64):
        xb = torch.stack([pre[i][0] for i in perm[b:b + 64]])
        yb = torch.stack([pre[i][1] for i in perm[b:b + 64]])
        loss = nn.functional.cross_entropy(pre_model(xb), yb)
        popt.zero_grad()
        loss.backward()
        popt.step()
    print(f"pretrain epoch {ep} loss {loss.item():.4f}")
os.makedirs(os.path.join(out, "pretrained"))
torch.save(pre_model[0].state_dict(), os.path.join(out, "pretrained", "body.pth"))

# ---- 2) fine-tune on filled/hollow x square/circle
ft_classes = [("square", True), ("square", False), ("circle", True), ("circle", False)]
train = dataset(rng, 1024, ft_classes)
valid = dataset(rng, 256, ft_classes)
if args.variant == "shuffled_train_labels":
    perm = rng.permutation(len(train))
    train = [(train[i][0], train[perm[i]][1]) for i in range(len(train))]
dls = DataLoaders(DataLoader(train, bs=64, shuffle=True, drop_last=True), DataLoader(valid, bs=128), device="cpu")

b = body()
b.load_state_dict(torch.load(os.path.join(out, "pretrained", "body.pth")))
model = nn.Sequential(b, nn.Sequential(nn.Dropout(0.25), nn.Linear(64, 4)))


def splitter(m):
    return [list(m[0].parameters()), list(m[1].parameters())]


learn = Learner(dls, model, loss_func=CrossEntropyLossFlat(), metrics=accuracy, splitter=splitter,
                path=out, model_dir="models")
json.dump({"arch": "3xConvBNReLU+head", "pretrained_body": "pretrained/body.pth", "recipe": "fine_tune",
           "epochs": 4, "freeze_epochs": 2, "base_lr": 4e-3, "bs": 64, "classes": [f"{s}_{'filled' if f else 'hollow'}" for s, f in ft_classes],
           "seed": 0}, open(os.path.join(out, "config.json"), "w"), indent=2)
learn.fine_tune(4, base_lr=4e-3, freeze_epochs=2,
                cbs=[CSVLogger(fname="history.csv", append=True),
                     SaveModelCallback(monitor="valid_loss", fname="best", with_opt=True)])
learn.save("final")

