"""Shared helpers for the batch4 run corpus. Each run script is called as
    python <script>.py OUT_RUNS_DIR RUN_NAME [extra args]
and writes its files into OUT_RUNS_DIR/<run_name>/ using only framework facilities
(plus whatever a user's own training loop would write)."""
import os
import sys
import shutil

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
import torch

# one intra-op thread: tiny models, and multi-threaded kernels spin badly on a busy 2-core box
torch.set_num_threads(1)


def run_dir(name, fresh=True):
    out = sys.argv[1]
    d = os.path.abspath(os.path.join(out, name))
    if fresh and os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d, exist_ok=True)
    return d


def seed_all(seed):
    import random
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if "keras" in sys.modules:
        import keras
        keras.utils.set_random_seed(seed)


def digits_split(seed=0, test_size=0.25, train_size=None):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = d.images.astype("float32")  # 0..16
    y = d.target.astype("int64")
    return train_test_split(x, y, test_size=test_size, train_size=train_size,
                            random_state=seed, stratify=y)


def tabular(n=4000, n_features=20, n_informative=10, n_classes=6, seed=0, flip_y=0.0,
            weights=None, class_sep=1.0, test_size=0.25, n_clusters_per_class=2):
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    x, y = make_classification(n_samples=n, n_features=n_features, n_informative=n_informative,
                               n_redundant=2, n_classes=n_classes,
                               n_clusters_per_class=n_clusters_per_class,
                               weights=weights, flip_y=flip_y, class_sep=class_sep, random_state=seed)
    return train_test_split(x.astype("float32"), y.astype("int64"), test_size=test_size,
                            random_state=seed, stratify=y)


def bar_images(n, n_classes=4, size=16, noise=0.6, seed=0, jitter=2):
    """Synthetic grayscale images: class k = a bar pattern at orientation k, plus gaussian noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    x = rng.normal(0, noise, size=(n, size, size)).astype("float32")
    idx = np.arange(size)
    for i in range(n):
        k = y[i]
        off = rng.integers(-jitter, jitter + 1)
        c = size // 2 + off
        if k % 4 == 0:
            x[i, c - 1:c + 1, :] += 1.0
        elif k % 4 == 1:
            x[i, :, c - 1:c + 1] += 1.0
        elif k % 4 == 2:
            x[i, idx, np.clip(idx + off, 0, size - 1)] += 1.0
        else:
            x[i, idx, np.clip(size - 1 - idx + off, 0, size - 1)] += 1.0
        if k >= 4:
            x[i] += 0.5 * (k // 4)
    return x, y.astype("int64")


def color_shapes(n, size=16, seed=0):
    """Synthetic RGB uint8 images (N, H, W, 3). 6 classes = {red, green, blue} x {square, ring}.
    Background is a dim random texture; the object colour is a noisy primary colour."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, size=n)
    x = rng.integers(0, 70, size=(n, size, size, 3)).astype("float32")
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        colour, shape = y[i] // 2, y[i] % 2
        cy, cx = rng.integers(5, size - 5, size=2)
        r = rng.integers(3, 5)
        if shape == 0:
            m = (np.abs(yy - cy) <= r - 1) & (np.abs(xx - cx) <= r - 1)
        else:
            d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            m = (d <= r) & (d >= r - 1.5)
        rgb = np.full(3, 40.0) + rng.normal(0, 15, 3)
        rgb[colour] = 200 + rng.normal(0, 25)
        x[i][m] = rgb
    x = np.clip(x + rng.normal(0, 12, size=x.shape), 0, 255).astype("uint8")
    return x, y.astype("int64")


# ---------------------------------------------------------------- token sequences (HF runs)
PAD, CLS, SEP = 0, 1, 2


def keyword_sequences(n, n_classes=4, vocab=120, kw_per_class=6, seed=0, min_len=12, max_len=40,
                      kw_lo=2, kw_hi=5, distract_hi=2, bg_zipf=None, flip=0.0, kw_table=None):
    """Synthetic 'documents': background tokens + keyword tokens of the label's class (+ a few
    distractor keywords of other classes; the label is the class with strictly most keywords, except
    for a fraction `flip` of documents whose label is redrawn at random).  kw_table (C x K token ids)
    overrides which tokens are the keywords.  Returns (list of token-id lists starting with CLS and ending with SEP, labels)."""
    rng = np.random.default_rng(seed)
    first_kw = 4
    if kw_table is None:
        kw_table = np.arange(first_kw, first_kw + n_classes * kw_per_class).reshape(n_classes, kw_per_class)
    kw = np.asarray(kw_table)
    bg_tokens = np.array([t for t in range(first_kw, vocab) if t not in set(kw.ravel().tolist())])
    if bg_zipf is None:
        p = np.ones(len(bg_tokens))
    else:
        p = 1.0 / np.arange(1, len(bg_tokens) + 1) ** bg_zipf
        p = p[rng.permutation(len(p))]
    p = p / p.sum()
    seqs, labels = [], []
    for _ in range(n):
        c = int(rng.integers(0, n_classes))
        L = int(rng.integers(min_len, max_len + 1))
        k = int(rng.integers(kw_lo, kw_hi + 1))
        body = list(rng.choice(bg_tokens, size=L, p=p))
        toks = list(rng.choice(kw[c], size=k))
        nd = int(rng.integers(0, min(distract_hi, k - 1) + 1))
        for _ in range(nd):
            oc = int(rng.choice([j for j in range(n_classes) if j != c]))
            toks.append(int(rng.choice(kw[oc])))
        pos = rng.choice(L, size=len(toks), replace=False)
        for pp, t in zip(pos, toks):
            body[pp] = int(t)
        seqs.append([CLS] + [int(t) for t in body] + [SEP])
        if flip and rng.random() < flip:
            c = int(rng.integers(0, n_classes))
        labels.append(c)
    return seqs, np.array(labels, dtype="int64")


class SeqDataset(torch.utils.data.Dataset):
    def __init__(self, seqs, labels):
        self.seqs, self.labels = seqs, labels

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return {"input_ids": self.seqs[i], "labels": int(self.labels[i])}


def pad_collate(batch):
    m = max(len(b["input_ids"]) for b in batch)
    ids = torch.full((len(batch), m), PAD, dtype=torch.long)
    att = torch.zeros((len(batch), m), dtype=torch.long)
    for i, b in enumerate(batch):
        ids[i, :len(b["input_ids"])] = torch.tensor(b["input_ids"])
        att[i, :len(b["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": att,
            "labels": torch.tensor([b["labels"] for b in batch], dtype=torch.long)}


def waveforms(n, length=128, noise=0.5, seed=0):
    """Synthetic 1-D signals, 5 classes: sine, square, sawtooth, triangle, chirp; random frequency,
    phase and amplitude, plus gaussian noise.  Returns (N, 1, length) float32 and labels."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, length, dtype="float32")
    y = rng.integers(0, 5, size=n)
    x = np.empty((n, 1, length), dtype="float32")
    for i in range(n):
        f = rng.uniform(2, 6)
        ph = rng.uniform(0, 2 * np.pi)
        a = rng.uniform(0.6, 1.4)
        u = 2 * np.pi * f * t + ph
        k = y[i]
        if k == 0:
            s = np.sin(u)
        elif k == 1:
            s = np.sign(np.sin(u))
        elif k == 2:
            s = 2 * ((u / (2 * np.pi)) % 1.0) - 1
        elif k == 3:
            s = 2 * np.abs(2 * ((u / (2 * np.pi)) % 1.0) - 1) - 1
        else:
            s = np.sin(2 * np.pi * (f * t + 2.5 * f * t ** 2) + ph)
        x[i, 0] = a * s + rng.normal(0, noise, length)
    return x, y.astype("int64")
