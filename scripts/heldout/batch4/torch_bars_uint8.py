"""Plain PyTorch CNN on synthetic 8-bit grayscale 'bar' images (6 classes: 4 orientations, two of
them also in a brighter variant), ImageFolder-style Dataset with per-split transforms; per-epoch
CSV history and a checkpoint per epoch.
BUG: the /255 scaling lives in the training transform only (together with the random-shift augmentation);
the validation transform just converts to float, so validation images are fed in 0..255.
usage: python torch_bars_uint8.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, csv
import common
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(404)


def to_uint8(x):
    return np.clip(90 + 55 * x, 0, 255).astype("uint8")


xtr, ytr = common.bar_images(3000, n_classes=6, noise=0.8, seed=21)
xva, yva = common.bar_images(600, n_classes=6, noise=0.8, seed=22)
xtr, xva = to_uint8(xtr), to_uint8(xva)


class ArrayImageDataset(Dataset):
    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), int(self.labels[i])


def train_transform(img):
    t = torch.from_numpy(img).float().div(255.0).unsqueeze(0)
    dy, dx = torch.randint(-1, 2, (2,)).tolist()      # +-1 px random shift
    return torch.roll(t, shifts=(dy, dx), dims=(1, 2))


def eval_transform(img):
    return torch.from_numpy(img).float().unsqueeze(0)


train_dl = DataLoader(ArrayImageDataset(xtr, ytr, train_transform), batch_size=64, shuffle=True)
val_dl = DataLoader(ArrayImageDataset(xva, yva, eval_transform), batch_size=256)

model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 6))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
crit = nn.CrossEntropyLoss()
os.makedirs(os.path.join(out, "weights"))

with open(os.path.join(out, "history.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["epoch", "train_loss", "train_acc", "valid_loss", "valid_acc", "lr"])
    w.writeheader()
    for epoch in range(1, 13):
        model.train()
        s = {"loss": 0.0, "correct": 0, "n": 0}
        for xb, yb in train_dl:
            out_ = model(xb)
            loss = crit(out_, yb)
            opt.zero_grad(); loss.backward(); opt.step()
            s["loss"] += loss.item() * len(yb); s["correct"] += (out_.argmax(1) == yb).sum().item(); s["n"] += len(yb)
        model.eval()
        v = {"loss": 0.0, "correct": 0, "n": 0}
        with torch.no_grad():
            for xb, yb in val_dl:
                out_ = model(xb)
                v["loss"] += crit(out_, yb).item() * len(yb); v["correct"] += (out_.argmax(1) == yb).sum().item()
                v["n"] += len(yb)
        w.writerow({"epoch": epoch, "train_loss": round(s["loss"] / s["n"], 5), "train_acc": round(s["correct"] / s["n"], 4),
                    "valid_loss": round(v["loss"] / v["n"], 5), "valid_acc": round(v["correct"] / v["n"], 4),
                    "lr": opt.param_groups[0]["lr"]})
        f.flush()
        torch.save(model.state_dict(), os.path.join(out, "weights", f"epoch_{epoch:02d}.pt"))
