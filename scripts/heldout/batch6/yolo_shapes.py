# Ultralytics YOLO detect from scratch on procedurally generated 2-class rectangles.
# usage: yolo_shapes.py RUNS NAME [correct|swapped]
import os, sys, random, shutil
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch
torch.set_num_threads(1)
from PIL import Image
RUNS, NAME = sys.argv[1], sys.argv[2]
MODE = sys.argv[3] if len(sys.argv) > 3 else "correct"
rng = random.Random(0)
work = os.path.join("/tmp", "b6_yolo_" + NAME)
shutil.rmtree(work, ignore_errors=True)
CLASSES = ["red_box", "blue_box"]            # dataset yaml order
COLORS = {"red_box": (220, 40, 40), "blue_box": (40, 60, 220)}
S = 64

def make(split, n, class_map):
    os.makedirs(f"{work}/images/{split}", exist_ok=True); os.makedirs(f"{work}/labels/{split}", exist_ok=True)
    for i in range(n):
        arr = np.random.RandomState(rng.randint(0, 10**6)).randint(90, 160, (S, S, 3)).astype(np.uint8)
        lines = []
        for _ in range(rng.randint(1, 2)):
            name = rng.choice(CLASSES)
            w, h = rng.randint(14, 30), rng.randint(14, 30)
            x0, y0 = rng.randint(0, S - w), rng.randint(0, S - h)
            arr[y0:y0 + h, x0:x0 + w] = COLORS[name]
            lines.append(f"{class_map[name]} {(x0 + w / 2) / S:.5f} {(y0 + h / 2) / S:.5f} {w / S:.5f} {h / S:.5f}")
        Image.fromarray(arr).save(f"{work}/images/{split}/{i:04d}.png")
        open(f"{work}/labels/{split}/{i:04d}.txt", "w").write("\n".join(lines) + "\n")

val_map = {n: i for i, n in enumerate(CLASSES)}
train_map = dict(val_map)
if MODE == "swapped":   # train exporter builds its id map from sorted names -> blue_box=0, red_box=1
    train_map = {n: i for i, n in enumerate(sorted(CLASSES))}
make("train", 128, train_map); make("val", 48, val_map)
open(f"{work}/data.yaml", "w").write(f"path: {work}\ntrain: images/train\nval: images/val\nnames:\n  0: red_box\n  1: blue_box\n")
open(f"{work}/tiny.yaml", "w").write(open(os.path.join(os.path.dirname(__file__), "yolo_tiny.yaml")).read())
from ultralytics import YOLO
model = YOLO(f"{work}/tiny.yaml", task="detect")
model.train(data=f"{work}/data.yaml", epochs=int(os.environ.get("YOLO_EPOCHS", 25)), imgsz=S, batch=16, workers=0,
            device="cpu", project=os.path.abspath(RUNS), name=NAME, exist_ok=True, plots=False, seed=0,
            deterministic=True, warmup_epochs=1, mosaic=0.0, close_mosaic=0, lr0=0.01, verbose=False, amp=False, val=True)
shutil.rmtree(work, ignore_errors=True)
import csv
rows = list(csv.DictReader(open(os.path.join(RUNS, NAME, "results.csv"))))
k = [c for c in rows[0] if "mAP50(B)" in c and "95" not in c][0]
m = [float(r[k]) for r in rows]
print("mAP50", m[0], max(m), m[-1])
if MODE == "correct":
    assert m[-1] > 0.5 and m[-1] > m[0] + 0.3, m
