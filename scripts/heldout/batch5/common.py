"""Shared helpers for the batch5 run corpus. Each run script is called as
    python <script>.py OUT_RUNS_DIR RUN_NAME [extra args]
and writes its files into OUT_RUNS_DIR/<run_name>/ using only framework facilities
(plus whatever a user's own training script would write)."""
import os
import sys
import shutil

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("YOLO_OFFLINE", "1")

import numpy as np
import torch

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


# ---------------------------------------------------------------- word-level tokenizer (no downloads)
def word_tokenizer(words, model_max_length=64):
    """A PreTrainedTokenizerFast over a fixed word list (whitespace split), with specials."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"]
    vocab = {t: i for i, t in enumerate(specials + [w for w in words if w not in specials])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.decoder = decoders.WordPiece(prefix="##")  # joins tokens with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, model_max_length=model_max_length,
                                   pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", bos_token="[BOS]",
                                   eos_token="[EOS]")
    return fast


# ---------------------------------------------------------------- synthetic images
def shape_images(n, size=32, n_classes=4, seed=0, noise=20):
    """RGB uint8 (N,H,W,3); class = shape kind {square, disc, cross, ring} in a random colour
    on a textured background."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    x = rng.integers(0, 90, size=(n, size, size, 3)).astype("float32")
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        cy, cx = rng.integers(size // 4, 3 * size // 4, size=2)
        r = rng.integers(size // 8, size // 5 + 1)
        k = y[i]
        if k == 0:
            m = (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)
        elif k == 1:
            m = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        elif k == 2:
            m = ((np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= 1)) | ((np.abs(xx - cx) <= r) & (np.abs(yy - cy) <= 1))
        else:
            d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            m = (d <= r) & (d >= r - 2)
        x[i][m] = rng.uniform(120, 255, 3)
    x = np.clip(x + rng.normal(0, noise, size=x.shape), 0, 255).astype("uint8")
    return x, y.astype("int64")


def to_tensor_images(x):
    return torch.tensor(x, dtype=torch.float32).permute(0, 3, 1, 2) / 127.5 - 1.0


# ---------------------------------------------------------------- synthetic topic "documents"
def topic_words(n_topics=5, kw_per_topic=8, n_bg=60):
    kws = [["t%d_w%d" % (t, j) for j in range(kw_per_topic)] for t in range(n_topics)]
    bg = ["w%d" % j for j in range(n_bg)]
    return kws, bg


def topic_docs(n, n_topics=5, seed=0, min_len=10, max_len=30, kw_lo=1, kw_hi=4, distract=1, flip=0.0,
               kw_per_topic=8, n_bg=60):
    """Background words + a few keywords of the label's topic (+ up to `distract` keywords of another
    topic).  Returns (list of strings, labels)."""
    rng = np.random.default_rng(seed)
    kws, bg = topic_words(n_topics, kw_per_topic, n_bg)
    texts, labels = [], []
    for _ in range(n):
        c = int(rng.integers(0, n_topics))
        L = int(rng.integers(min_len, max_len + 1))
        body = list(rng.choice(bg, size=L))
        k = int(rng.integers(kw_lo, kw_hi + 1))
        toks = list(rng.choice(kws[c], size=k))
        for _ in range(int(rng.integers(0, min(distract, k - 1) + 1)) if k > 1 else 0):
            oc = int(rng.choice([j for j in range(n_topics) if j != c]))
            toks.append(str(rng.choice(kws[oc])))
        for p, t in zip(rng.choice(L, size=len(toks), replace=False), toks):
            body[p] = str(t)
        if flip and rng.random() < flip:
            c = int(rng.integers(0, n_topics))
        texts.append(" ".join(body))
        labels.append(c)
    return texts, np.array(labels, dtype="int64")


def topic_vocab(n_topics=5, kw_per_topic=8, n_bg=60):
    kws, bg = topic_words(n_topics, kw_per_topic, n_bg)
    return [w for k in kws for w in k] + bg


def colour_shapes(n, size=24, seed=0):
    """RGB uint8 (N,H,W,3): 6 classes = {red, green, blue} x {square, ring}; textured background."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, size=n)
    x = rng.integers(0, 90, size=(n, size, size, 3)).astype("float32")
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        colour, shape = y[i] // 2, y[i] % 2
        cy, cx = rng.integers(size // 4, 3 * size // 4, size=2)
        r = rng.integers(size // 8, size // 5 + 1)
        if shape == 0:
            m = (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)
        else:
            d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            m = (d <= r) & (d >= r - 2)
        rgb = rng.uniform(60, 140, 3)
        rgb[colour] = rng.uniform(170, 255)
        x[i][m] = rgb
    x = np.clip(x + rng.normal(0, 20, size=x.shape), 0, 255).astype("uint8")
    return x, y.astype("int64")
