"""Synthetic detection data: coloured rectangles on noise. Deterministic per index."""
import numpy as np
import torch

# class id (1-based, 0 = background in torchvision detection) -> RGB colour
COLOURS = {1: (0.9, 0.15, 0.15), 2: (0.15, 0.85, 0.2), 3: (0.2, 0.3, 0.95)}


class SyntheticShapes(torch.utils.data.Dataset):
    def __init__(self, n, size=96, seed=0, box_format="xyxy", label_offset=0):
        self.n, self.size, self.seed = n, size, seed
        self.box_format = box_format      # "xyxy" (correct) or "xywh" (bug)
        self.label_offset = label_offset  # 0 (correct, labels 1..3) or -1 (bug, labels 0..2)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 100003 + idx)
        s = self.size
        img = rng.uniform(0.0, 0.45, size=(3, s, s)).astype(np.float32)
        boxes, labels = [], []
        for _ in range(rng.integers(1, 4)):
            for _try in range(20):
                w, h = rng.integers(14, 44, size=2)
                x1, y1 = rng.integers(0, s - w), rng.integers(0, s - h)
                b = np.array([x1, y1, x1 + w, y1 + h], dtype=np.float32)
                ok = True
                for o in boxes:  # avoid heavy overlap
                    ix = max(0, min(b[2], o[2]) - max(b[0], o[0]))
                    iy = max(0, min(b[3], o[3]) - max(b[1], o[1]))
                    if ix * iy > 0.2 * min(w * h, (o[2] - o[0]) * (o[3] - o[1])):
                        ok = False
                        break
                if ok:
                    break
            c = int(rng.integers(1, 4))
            col = np.array(COLOURS[c], dtype=np.float32)[:, None, None]
            img[:, y1:y1 + h, x1:x1 + w] = col + rng.normal(0, 0.05, size=(3, h, w)).astype(np.float32)
            boxes.append(b)
            labels.append(c)
        boxes = np.stack(boxes)
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        if self.box_format == "xywh":
            boxes = boxes.copy()
            boxes[:, 2:] -= boxes[:, :2]
        target = {
            "boxes": torch.as_tensor(boxes, dtype=torch.float32),
            "labels": torch.as_tensor(labels, dtype=torch.int64) + self.label_offset,
            "image_id": torch.tensor(idx),
            "area": torch.as_tensor(area, dtype=torch.float32),
            "iscrowd": torch.zeros(len(labels), dtype=torch.int64),
        }
        return torch.from_numpy(np.clip(img, 0, 1)), target
