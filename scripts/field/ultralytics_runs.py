"""Ultralytics YOLO detect runs: a from-scratch YOLOv8 at a tiny width (custom scale in a
copy of the yolov8.yaml layout) on synthetic 64x64 images of coloured squares, trained with
`YOLO(...).train()` exactly as the docs show, TensorBoard on (Ultralytics' own callback),
plots=False so no fonts are fetched, all other integrations off. Offline: YOLO_OFFLINE=1 and a
private YOLO_CONFIG_DIR so the user's settings.json is not touched.

Each run is Ultralytics' own save_dir (project=tests/field, name=<run>, exist_ok): args.yaml,
results.csv, weights/{last,best,epochN}.pt, events.out.tfevents.*. The dataset lives outside
the run (in a temp folder), as a real user's would; args.yaml names its yaml."""
import os
import sys
import tempfile
from pathlib import Path

_CFG = tempfile.mkdtemp(prefix="yolo_cfg_")
os.environ.setdefault("YOLO_CONFIG_DIR", _CFG)
os.environ["YOLO_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from common import OUT, record, run_dir, versions  # noqa: E402

DATA_ROOT = Path(tempfile.gettempdir()) / "field_yolo_data"

# yolov8.yaml's layout with one more scale, 't': width 1/16, channels capped at 16, depth
# 1/3, reg_max 4 (DFL bins) instead of 16: about 30 k parameters
MODEL_YAML = """\
nc: 2
reg_max: 4
scales:
  t: [0.33, 0.0625, 256]
backbone:
  - [-1, 1, Conv, [64, 3, 2]]
  - [-1, 1, Conv, [128, 3, 2]]
  - [-1, 3, C2f, [128, True]]
  - [-1, 1, Conv, [256, 3, 2]]
  - [-1, 6, C2f, [256, True]]
  - [-1, 1, Conv, [512, 3, 2]]
  - [-1, 6, C2f, [512, True]]
  - [-1, 1, Conv, [1024, 3, 2]]
  - [-1, 3, C2f, [1024, True]]
  - [-1, 1, SPPF, [1024, 5]]
head:
  - [-1, 1, nn.Upsample, [None, 2, "nearest"]]
  - [[-1, 6], 1, Concat, [1]]
  - [-1, 3, C2f, [512]]
  - [-1, 1, nn.Upsample, [None, 2, "nearest"]]
  - [[-1, 4], 1, Concat, [1]]
  - [-1, 3, C2f, [256]]
  - [-1, 1, Conv, [256, 3, 2]]
  - [[-1, 12], 1, Concat, [1]]
  - [-1, 3, C2f, [512]]
  - [-1, 1, Conv, [512, 3, 2]]
  - [[-1, 9], 1, Concat, [1]]
  - [-1, 3, C2f, [1024]]
  - [[15, 18, 21], 1, Detect, [nc]]
"""

COLOURS = [(230, 40, 40), (40, 80, 230)]  # class 0 red, class 1 blue (RGB)


def make_dataset(label_bug=None, n_train=320, n_val=32, size=64):
    """images/{train,val}/*.png + labels/{train,val}/*.txt (class cx cy w h, normalised), one
    to three squares per image on a noisy grey background. label_bug: 'val_class_swapped'
    writes the val split's class ids swapped (0<->1: a val export with the other class map)."""
    import cv2

    root = DATA_ROOT / (label_bug or "clean")
    if root.exists():
        import shutil

        shutil.rmtree(root)
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("val", n_val)):
        (root / "images" / split).mkdir(parents=True)
        (root / "labels" / split).mkdir(parents=True)
        for i in range(n):
            img = (110 + rng.normal(0, 12, (size, size, 3))).clip(0, 255).astype(np.uint8)
            lines = []
            for _ in range(rng.integers(1, 4)):
                c = int(rng.integers(0, 2))
                w, h = rng.integers(12, 28, 2)
                x0, y0 = rng.integers(0, size - w), rng.integers(0, size - h)
                img[y0:y0 + h, x0:x0 + w] = COLOURS[c]
                cx, cy = x0 + w / 2, y0 + h / 2
                cls = 1 - c if (label_bug == "val_class_swapped" and split == "val") else c
                lines.append(f"{cls} {cx / size:.6f} {cy / size:.6f} {w / size:.6f} {h / size:.6f}")
            cv2.imwrite(str(root / "images" / split / f"{i:04d}.png"), img[:, :, ::-1])
            (root / "labels" / split / f"{i:04d}.txt").write_text("\n".join(lines) + "\n")
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n  0: red\n  1: blue\n")
    (root / "yolov8t.yaml").write_text(MODEL_YAML)
    return root


def integrations(tensorboard):
    """Ultralytics' logger integrations all off, TensorBoard as asked."""
    from ultralytics import settings

    settings.update({"tensorboard": tensorboard, "sync": False, "mlflow": False, "wandb": False,
                     "comet": False, "clearml": False, "dvc": False, "raytune": False})


# What every Ultralytics field run shares: tiny, on CPU, deterministic, SGD at its default lr0.
COMMON = dict(batch=16, workers=0, device="cpu", exist_ok=True, plots=False, optimizer="SGD",
              lr0=0.01, seed=0, deterministic=True, amp=False, verbose=False)


def fit(name, model_yaml, tensorboard, task=None, **args):
    """Train `model_yaml` into a clean OUT/name (Ultralytics writes into it with exist_ok=True):
    the logger integrations set, seed 0, COMMON under `args`."""
    from ultralytics import YOLO

    integrations(tensorboard=tensorboard)
    run_dir(name)
    torch.manual_seed(0)
    model = YOLO(str(model_yaml), task=task)
    model.train(**{**COMMON, "project": str(OUT), "name": name, **args})


def train(name, label_bug=None, **kw):
    root = make_dataset(label_bug)
    fit(name, root / "yolov8t.yaml", tensorboard=True,
        **{**dict(data=str(root / "data.yaml"), epochs=30, imgsz=64, warmup_epochs=1,
                  save_period=15, val=True, cache=False, close_mosaic=5), **kw})
    # the dataset's labels.cache lives with the dataset, not the run


RUNS = {
    "ultralytics_healthy": (dict(), None, [], {}),
    "ultralytics_lr_100x": (
        dict(lr0=1.0),
        "optimizer=SGD lr0=1.0 (Ultralytics default lr0=0.01 for SGD, and check_cfg caps lr0 at 1.0): 100x; warmup_epochs=1 "
        "ramps to it over the first epoch",
        ["S4.1", "O22", "S3.1", "S3.2"], {}),
    "ultralytics_val_class_swapped": (
        dict(label_bug="val_class_swapped"),
        "val labels written with the class ids swapped (red=1, blue=0; train has red=0, "
        "blue=1): train losses fall as in the healthy run while val cls_loss climbs and mAP50 "
        "stays near zero at every epoch",
        ["V3", "F13"], {}),
}

if __name__ == "__main__":
    made = versions("torch", "ultralytics")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts,
               profile={"framework": "ultralytics", "resumed_at": None, "init_checkpoint": False})
