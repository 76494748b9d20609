"""Lightning CNN on synthetic 16x16 RGB 'coloured shapes' (6 classes = {red, green, blue} x
{square, ring}); inputs normalised with per-channel mean/std computed on the training images.
CSVLogger, per-epoch validation, best + last checkpoint.
BUG: the validation shard was exported by a different tool (OpenCV) and is stored in BGR channel
order; the data module reads it exactly like the RGB training shard (no channel flip), so at
validation the red and blue channels are swapped and each is normalised with the other channel's
mean/std.
usage: python lit_color_shapes.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
import lightning as L
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.callbacks import ModelCheckpoint

name = sys.argv[2]
out = common.run_dir(name)
L.seed_everything(61, workers=True)

# ---- upstream data: train shard RGB, validation shard written by cv2.imwrite -> BGR on disk
train_rgb, ytr = common.color_shapes(4000, seed=5)
val_rgb, yva = common.color_shapes(800, seed=6)
val_bgr = np.ascontiguousarray(val_rgb[..., ::-1])


# ---- the user's data pipeline
class ShapesDataset(Dataset):
    def __init__(self, images_hwc_uint8, labels, mean, std, augment=False):
        self.x, self.y, self.augment = images_hwc_uint8, labels, augment
        self.mean = torch.tensor(mean).view(3, 1, 1)
        self.std = torch.tensor(std).view(3, 1, 1)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        img = torch.from_numpy(self.x[i]).permute(2, 0, 1).float() / 255.0
        if self.augment and torch.rand(1).item() < 0.5:
            img = img.flip(2)
        return (img - self.mean) / self.std, int(self.y[i])


mean = (train_rgb / 255.0).mean(axis=(0, 1, 2)).astype("float32")
std = (train_rgb / 255.0).std(axis=(0, 1, 2)).astype("float32")
train_ds = ShapesDataset(train_rgb, ytr, mean, std, augment=True)
val_ds = ShapesDataset(val_bgr, yva, mean, std)


class ShapesCNN(L.LightningModule):
    def __init__(self, lr=2e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(32, 6))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)}


trainer = L.Trainer(max_epochs=12, logger=CSVLogger(out, name="shapes"),
                    callbacks=[ModelCheckpoint(monitor="val_acc", mode="max", save_last=True)],
                    enable_progress_bar=False, accelerator="cpu", devices=1, deterministic=True)
trainer.fit(ShapesCNN(), DataLoader(train_ds, batch_size=64, shuffle=True), DataLoader(val_ds, batch_size=200))
