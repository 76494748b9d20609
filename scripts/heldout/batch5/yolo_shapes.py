"""Ultralytics YOLO detect on procedurally generated 64x64 images: 1-3 filled squares/discs of three colours
(classes red / green / blue) on a noisy background.  Dataset is written to <run>/data (YOLO txt labels),
training output goes to <run>/runs/detect/train (ultralytics' own layout)."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
from PIL import Image

name = sys.argv[2]
variant = sys.argv[3] if len(sys.argv) > 3 else "ok"
out = common.run_dir(name)
os.environ.setdefault("YOLO_CONFIG_DIR", "/tmp/batch5_ultralytics_cfg")
common.seed_all(0)
S = 64
COLS = [(230, 40, 40), (40, 210, 40), (50, 60, 235)]


def make_split(split, n, seed):
    rng = np.random.default_rng(seed)
    idir = os.path.join(out, "data", "images", split); ldir = os.path.join(out, "data", "labels", split)
    os.makedirs(idir); os.makedirs(ldir)
    yy, xx = np.mgrid[0:S, 0:S]
    for i in range(n):
        img = rng.integers(60, 140, size=(S, S, 3)).astype("float32")
        lines = []
        for _ in range(int(rng.integers(1, 4))):
            c = int(rng.integers(0, 3)); w = int(rng.integers(10, 22)); h = int(rng.integers(10, 22))
            x0 = int(rng.integers(0, S - w)); y0 = int(rng.integers(0, S - h))
            img[y0:y0 + h, x0:x0 + w] = np.array(COLS[c]) + rng.normal(0, 15, 3)
            cx, cy = (x0 + w / 2) / S, (y0 + h / 2) / S
            if variant == "ok":
                lines.append(f"{c} {cx:.5f} {cy:.5f} {w / S:.5f} {h / S:.5f}")
            else:  # box written from (row, col) numpy indices
                lines.append(f"{c} {cy:.5f} {cx:.5f} {h / S:.5f} {w / S:.5f}")
        img = np.clip(img + rng.normal(0, 10, img.shape), 0, 255).astype("uint8")
        Image.fromarray(img).save(os.path.join(idir, f"{split}_{i:04d}.jpg"), quality=90)
        with open(os.path.join(ldir, f"{split}_{i:04d}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


make_split("train", int(os.environ.get("NTRAIN", 160)), 1)
make_split("val", 40, 2)
with open(os.path.join(out, "data.yaml"), "w") as f:
    f.write(f"path: {os.path.join(out, 'data')}\ntrain: images/train\nval: images/val\nnames:\n  0: red\n  1: green\n  2: blue\n")
with open(os.path.join(out, "yolov8-tiny.yaml"), "w") as f:  # a slimmed yolov8 (width 0.125)
    f.write(open(os.path.join(os.path.dirname(__import__("ultralytics").__file__), "cfg/models/v8/yolov8.yaml")).read()
            .replace("scales:", "scales_unused:") + "\ndepth_multiple: 0.33\nwidth_multiple: 0.125\n")

from ultralytics import YOLO
os.chdir(out)
model = YOLO(os.path.join(out, "yolov8-tiny.yaml"))
model.train(data=os.path.join(out, "data.yaml"), epochs=int(os.environ.get("EPOCHS", 30)), imgsz=64, batch=16,
            device="cpu", workers=0, project=os.path.join(out, "runs", "detect"), name="train", exist_ok=False,
            plots=False, seed=0, deterministic=True, amp=False, cache=True, mosaic=1.0, close_mosaic=5,
            lr0=0.01, warmup_epochs=2, patience=100, verbose=False)
