"""Procedural 32x32 shape images (square / circle / triangle / cross, filled or hollow)."""
import numpy as np
import torch

S = 32
yy, xx = np.mgrid[0:S, 0:S]


def draw(rng, shape, filled):
    img = rng.random((3, S, S)).astype(np.float32) * 0.3
    r = rng.integers(6, 11)
    cx, cy = rng.integers(r + 1, S - r - 1, size=2)
    col = rng.random(3) * 0.6 + 0.4
    if shape == "square":
        m = (abs(xx - cx) <= r) & (abs(yy - cy) <= r)
        inner = (abs(xx - cx) <= r - 3) & (abs(yy - cy) <= r - 3)
    elif shape == "circle":
        d = np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2)
        m, inner = d <= r, d <= r - 3
    elif shape == "triangle":
        m = (yy - cy <= r) & (yy - cy >= -r) & (abs(xx - cx) <= (yy - cy + r) / 2)
        inner = (yy - cy <= r - 3) & (yy - cy >= -r + 4) & (abs(xx - cx) <= (yy - cy + r - 4) / 2)
    else:  # cross
        m = ((abs(xx - cx) <= 2) & (abs(yy - cy) <= r)) | ((abs(yy - cy) <= 2) & (abs(xx - cx) <= r))
        inner = np.zeros_like(m)
    if not filled:
        m = m & ~inner
    img[:, m] = col[:, None]
    return torch.from_numpy(img)


def dataset(rng, n, classes):
    items = []
    for _ in range(n):
        c = int(rng.integers(len(classes)))
        items.append((draw(rng, *classes[c]), torch.tensor(c)))
    return items
