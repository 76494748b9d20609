# Keras 3 (torch backend). Pretrain a small Conv1D net on a large synthetic signal-classification
# set, save it, then fine-tune the saved model on a small labelled set with CSVLogger.
import os, sys
os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np, torch
torch.set_num_threads(1)
import keras
from keras import layers

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
T, C = 64, 5
t = np.linspace(0, 1, T)

def make(n):
    y = rng.integers(0, C, n)
    freq = 2 + 1.5 * y + rng.normal(0, 0.8, n)  # overlapping class-dependent frequencies
    phase = rng.uniform(0, 2 * np.pi, n)
    x = np.sin(2 * np.pi * freq[:, None] * t[None] + phase[:, None]) + rng.normal(0, 0.8, (n, T))
    return x[..., None].astype("float32"), y

def build():
    inp = keras.Input((T, 1))
    h = layers.Conv1D(32, 5, activation="relu", padding="same")(inp)
    h = layers.MaxPooling1D(2)(h)
    h = layers.Conv1D(64, 5, activation="relu", padding="same")(h)
    h = layers.Flatten()(h)
    h = layers.Dense(256, activation="relu")(h)
    return keras.Model(inp, layers.Dense(C, activation="softmax")(h))

# ---- "pretraining"
xp, yp = make(6000)
base = build()
base.compile(optimizer=keras.optimizers.Adam(2e-3), loss="sparse_categorical_crossentropy",
             metrics=["accuracy"])
base.fit(xp, yp, batch_size=64, epochs=5, verbose=2)
base.save(os.path.join(out, "pretrained.keras"))

# ---- fine-tune on a small labelled set
xtr, ytr = make(600)
xva, yva = make(1000)
model = keras.models.load_model(os.path.join(out, "pretrained.keras"))
model.compile(optimizer=keras.optimizers.Adam(2e-4), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
model.fit(xtr, ytr, validation_data=(xva, yva), batch_size=16, epochs=6, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(os.path.join(out, "train_history.txt")),
                     keras.callbacks.ModelCheckpoint(os.path.join(out, "best.keras"),
                                                     monitor="val_loss", save_best_only=True)])
