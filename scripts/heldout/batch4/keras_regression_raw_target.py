"""Keras (torch backend) MLP regression on a synthetic 'house price' table: standardised inputs,
raw (unstandardised) target in thousands (mean ~300, std ~110); loss MSE, metric MAE.
CSVLogger + ModelCheckpoint(best .keras) + ReduceLROnPlateau; final model + history.json.
HEALTHY: losses are large numbers (1e5 at start, ~1e3 at the end) on both splits, same scale.
usage: python keras_regression_raw_target.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, json
import common
import numpy as np
import keras
from sklearn.datasets import make_regression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(2026)

x, y = make_regression(n_samples=5000, n_features=16, n_informative=10, noise=25.0, random_state=3)
y = 300.0 + 0.8 * y + 0.002 * y ** 2          # price in k$, mildly non-linear
x = x.astype("float32"); y = y.astype("float32")
xtr, xva, ytr, yva = train_test_split(x, y, test_size=0.2, random_state=3)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr), sc.transform(xva)

model = keras.Sequential([keras.Input((16,)),
                          keras.layers.Dense(128, activation="relu"),
                          keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
cbs = [keras.callbacks.CSVLogger(os.path.join(out, "training_log.csv")),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "best_model.keras"), monitor="val_loss", save_best_only=True),
       keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=4, min_lr=1e-5)]
hist = model.fit(xtr, ytr, validation_data=(xva, yva), epochs=60, batch_size=64, callbacks=cbs, verbose=2)
model.save(os.path.join(out, "final_model.keras"))
with open(os.path.join(out, "history.json"), "w") as f:
    json.dump({k: [float(v) for v in vs] for k, vs in hist.history.items()}, f)
print("y_train mean/std", float(ytr.mean()), float(ytr.std()))
