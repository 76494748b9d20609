"""Keras 3 (torch backend): pretrain a small BN-CNN on grey-level shape classification (saved as
base_cnn.keras), then fine-tune it with a new 6-way head on colour x shape images.
Fine-tune logs: CSVLogger (training_log.csv), ModelCheckpoint (best.keras), final.keras."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import keras
from keras import layers

name = sys.argv[2]
FREEZE = os.environ.get("FREEZE", "1") == "1"
out = common.run_dir(name)
keras.utils.set_random_seed(0)

# ---- pretraining on task A (4 shape classes), images converted to grey
xa, ya = common.shape_images(3000, size=24, seed=0)
xa = np.repeat(xa.mean(-1, keepdims=True), 3, -1).astype("float32") / 255.0
base = keras.Sequential([keras.Input((24, 24, 3)),
                         layers.Conv2D(16, 3, padding="same", use_bias=False), layers.BatchNormalization(momentum=0.9), layers.ReLU(),
                         layers.MaxPooling2D(), layers.Conv2D(32, 3, padding="same", use_bias=False),
                         layers.BatchNormalization(momentum=0.9), layers.ReLU(), layers.MaxPooling2D(),
                         layers.Conv2D(64, 3, padding="same", use_bias=False), layers.BatchNormalization(momentum=0.9), layers.ReLU(),
                         layers.GlobalAveragePooling2D()], name="backbone")
pre = keras.Sequential([base, layers.Dense(4)])
pre.compile(keras.optimizers.Adam(2e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
pre.fit(xa, ya, batch_size=64, epochs=4, validation_split=0.2, verbose=2)
base.save(os.path.join(out, "base_cnn.keras"))

# ---- fine-tuning on task B
xb, yb = common.colour_shapes(2400, size=24, seed=3)
xb = xb.astype("float32") / 255.0
backbone = keras.models.load_model(os.path.join(out, "base_cnn.keras"))
backbone.trainable = not FREEZE
inp = keras.Input((24, 24, 3))
h = backbone(inp)
h = layers.Dropout(0.2)(h)
model = keras.Model(inp, layers.Dense(6)(h))
model.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.summary(print_fn=lambda s, line_break=True: open(os.path.join(out, "model_summary.txt"), "a").write(s + "\n"))
model.fit(xb, yb, batch_size=64, epochs=15, validation_split=0.2, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(os.path.join(out, "training_log.csv")),
                     keras.callbacks.ModelCheckpoint(os.path.join(out, "best.keras"), monitor="val_accuracy", save_best_only=True)])
model.save(os.path.join(out, "final.keras"))
