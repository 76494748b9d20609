"""Keras 3 (torch backend) small CNN on sklearn's 8x8 digits.

Per-epoch CSVLogger log (logs/history.csv), ModelCheckpoint (.keras) of the best val_loss and a
final model (ckpt/).
"""
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np
import keras
from keras import layers
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

out = sys.argv[1]
os.makedirs(os.path.join(out, "logs"), exist_ok=True)
os.makedirs(os.path.join(out, "ckpt"), exist_ok=True)
keras.utils.set_random_seed(42)

d = load_digits()
X = (d.images / 16.0).astype("float32")[..., None]
y = d.target
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)

model = keras.Sequential([
    keras.Input((8, 8, 1)),
    layers.Conv2D(32, 3, padding="same", activation="relu"),
    layers.Conv2D(32, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Conv2D(64, 3, padding="same", activation="relu"),
    layers.GlobalAveragePooling2D(),
    layers.Dropout(0.25),
    layers.Dense(64, activation="relu"),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(2e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.summary()
model.fit(Xtr, ytr, validation_split=0.15, epochs=40, batch_size=32, verbose=2, callbacks=[
    keras.callbacks.CSVLogger(os.path.join(out, "logs", "history.csv")),
    keras.callbacks.ModelCheckpoint(os.path.join(out, "ckpt", "best.keras"), monitor="val_loss", save_best_only=True),
])
model.save(os.path.join(out, "ckpt", "final.keras"))
loss, acc = model.evaluate(Xte, yte, verbose=0)
print(f"test loss {loss:.4f} test acc {acc:.4f}")
