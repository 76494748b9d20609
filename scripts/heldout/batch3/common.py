"""Shared helpers for the batch3 run corpus. Each run script is called as
    python <script>.py OUT_RUNS_DIR
and writes its files into OUT_RUNS_DIR/<run_name>/ using only framework facilities."""
import os
import sys
import shutil

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch

# single intra-op thread: on a 2-core box multi-threaded torch CPU kernels are far slower
torch.set_num_threads(1)


def run_dir(name):
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "runs")
    d = os.path.abspath(os.path.join(out, name))
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def seed_all(seed):
    import random
    random.seed(seed)
    np.random.seed(seed)
    try:
        torch.manual_seed(seed)
    except ImportError:
        pass
    if os.environ.get("KERAS_BACKEND") and "keras" in sys.modules:
        import keras
        keras.utils.set_random_seed(seed)


def digits_split(seed=0, test_size=0.25):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = d.images.astype("float32")  # 0..16
    y = d.target.astype("int64")
    return train_test_split(x, y, test_size=test_size, random_state=seed, stratify=y)


def tabular(n=4000, n_features=20, n_informative=10, n_classes=6, seed=0, flip_y=0.0,
            weights=None, class_sep=1.0, test_size=0.25, n_clusters_per_class=2):
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    x, y = make_classification(n_samples=n, n_features=n_features, n_informative=n_informative,
                               n_redundant=2, n_classes=n_classes, n_clusters_per_class=n_clusters_per_class,
                               weights=weights, flip_y=flip_y, class_sep=class_sep, random_state=seed)
    x = x.astype("float32")
    y = y.astype("int64")
    return train_test_split(x, y, test_size=test_size, random_state=seed, stratify=y)


def bar_images(n, n_classes=4, size=16, noise=0.6, seed=0):
    """Synthetic grayscale images: class k = a bar pattern at orientation/position k, plus noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    x = rng.normal(0, noise, size=(n, size, size)).astype("float32")
    for i in range(n):
        k = y[i]
        off = rng.integers(-2, 3)
        c = size // 2 + off
        if k % 4 == 0:
            x[i, c - 1:c + 1, :] += 1.0          # horizontal bar
        elif k % 4 == 1:
            x[i, :, c - 1:c + 1] += 1.0          # vertical bar
        elif k % 4 == 2:
            idx = np.arange(size)
            x[i, idx, np.clip(idx + off, 0, size - 1)] += 1.0   # diagonal
        else:
            idx = np.arange(size)
            x[i, idx, np.clip(size - 1 - idx + off, 0, size - 1)] += 1.0  # anti-diagonal
        if k >= 4:
            x[i] += 0.5 * (k // 4)  # brightness shift for extra classes
    return x, y.astype("int64")
