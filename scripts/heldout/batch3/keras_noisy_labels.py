"""Keras 3 functional MLP on a hard 4-class task with 30% label noise applied to BOTH train and
validation labels (a noisy label is replaced by a different class chosen uniformly).  AdamW with
a CosineDecay schedule.  Accuracy rises slowly to a modest level (~0.55-0.6 ceiling).
usage: python keras_noisy_labels.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import keras
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(99)

C = 4
xtr, xva, ytr, yva = common.tabular(n=5000, n_features=20, n_informative=6, n_classes=C,
                                    seed=99, class_sep=0.8)
rng = np.random.default_rng(99)


def corrupt(y):
    y = y.copy()
    m = rng.random(len(y)) < 0.30
    y[m] = (y[m] + rng.integers(1, C, size=m.sum())) % C
    return y


ytr, yva = corrupt(ytr), corrupt(yva)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")

inp = keras.Input(shape=(20,), name="features")
h = keras.layers.Dense(64, activation="relu")(inp)
h = keras.layers.Dense(64, activation="relu")(h)
o = keras.layers.Dense(C, activation="softmax", name="probs")(h)
model = keras.Model(inp, o)
steps = int(np.ceil(len(xtr) / 64)) * 30
model.compile(optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.CosineDecay(1e-3, steps),
                                               weight_decay=1e-2),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=30, batch_size=64, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/training.log"),
                     keras.callbacks.ModelCheckpoint(f"{out}/checkpoint.keras", monitor="val_loss",
                                                     save_best_only=True)])
