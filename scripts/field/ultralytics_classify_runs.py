"""Ultralytics YOLO classify runs (the task the readers were not written against: no "(B)"
series, `train/loss` and `metrics/accuracy_top1` per epoch): a from-scratch yolov8-cls layout at
the tiny 't' scale of ultralytics_runs.py, on a synthetic image folder (train/ and val/ with one
folder per class: noise with a red or a blue square), trained with `YOLO(...).train()` as the
docs show, offline, plots=False. Healthy, and SGD at lr0=1.0 (the cap check_cfg allows; 100x the
default 0.01)."""
import sys
import tempfile
from pathlib import Path

# ultralytics_runs sets the offline environment (YOLO_OFFLINE, a private YOLO_CONFIG_DIR, one
# OpenMP thread) on import, before torch loads; its detect layout's backbone is the classifier's,
# without SPPF and the DFL bins.
from ultralytics_runs import MODEL_YAML as DETECT_YAML, fit  # noqa: I001
from common import record, versions

import numpy as np  # noqa: E402

DATA_ROOT = Path(tempfile.gettempdir()) / "field_yolo_cls_data"

MODEL_YAML = (DETECT_YAML.split("  - [-1, 1, SPPF")[0].replace("reg_max: 4\n", "")
              + "head:\n  - [-1, 1, Classify, [nc]]\n")


def make_dataset(size=32):
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, n in [("train", 96), ("val", 32)]:
        for c, col in enumerate([(200, 30, 30), (30, 30, 200)]):
            d = DATA_ROOT / split / f"c{c}"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n // 2):
                a = rng.integers(0, 60, (size, size, 3)).astype(np.uint8)
                x, y = rng.integers(0, size // 2, 2)
                a[y:y + 12, x:x + 12] = col
                Image.fromarray(a).save(d / f"{i}.png")
    (DATA_ROOT / "yolov8t-cls.yaml").write_text(MODEL_YAML)
    return DATA_ROOT


def train(name, **kw):
    root = make_dataset()
    fit(name, root / "yolov8t-cls.yaml", tensorboard=False, task="classify",
        **{**dict(data=str(root), epochs=10, imgsz=32, save_period=3), **kw})


RUNS = {
    "ultralytics_cls_healthy": (dict(), None, [], {}),
    "ultralytics_cls_lr_100x": (
        dict(lr0=1.0),
        "classify task, optimizer=SGD lr0=1.0 (default 0.01; check_cfg caps lr0 at 1.0): train/loss "
        "jumps x4.5 in the second epoch and ends near 18, val loss reaches 1e9, top-1 stays at chance",
        ["S4.1", "O22", "S3.1", "S3.2"], {}),
}

if __name__ == "__main__":
    made = versions("torch", "ultralytics")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts,
               profile={"phase": "classification", "framework": "ultralytics",
                        "resumed_at": None, "init_checkpoint": False})
