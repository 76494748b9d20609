"""Keras 3 Sequential Conv1D binary classifier on synthetic 1-D signals (class 1 has a short
burst of a higher-frequency oscillation hidden in noise).  Dense(1, sigmoid) +
BinaryCrossentropy, metrics=["accuracy"], ReduceLROnPlateau.
usage: python keras_binary_conv1d.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import keras

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(17)

rng = np.random.default_rng(17)
N, T = 3000, 128
y = rng.integers(0, 2, size=N)
t = np.arange(T)
x = rng.normal(0, 1.0, size=(N, T))
x += 0.5 * np.sin(2 * np.pi * t / 32.0)[None, :]           # shared slow background
for i in range(N):
    start = rng.integers(0, T - 32)
    freq = 1 / 6.0 if y[i] == 1 else 1 / 14.0
    x[i, start:start + 32] += 0.9 * np.sin(2 * np.pi * freq * np.arange(32) + rng.uniform(0, 6.28))
x = x[..., None].astype("float32")
y = y.astype("float32")
xtr, xva, ytr, yva = x[:2400], x[2400:], y[:2400], y[2400:]

model = keras.Sequential([
    keras.Input(shape=(T, 1)),
    keras.layers.Conv1D(16, 7, activation="relu", padding="same"),
    keras.layers.MaxPooling1D(2),
    keras.layers.Conv1D(32, 5, activation="relu", padding="same"),
    keras.layers.GlobalMaxPooling1D(),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(1, activation="sigmoid"),
], name="burst_detector")
model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=keras.losses.BinaryCrossentropy(),
              metrics=["accuracy"])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=15, batch_size=64, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/train_log.csv"),
                     keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2),
                     keras.callbacks.ModelCheckpoint(f"{out}/ckpt_best.keras", monitor="val_loss",
                                                     save_best_only=True)])
model.save(f"{out}/final.keras")
