"""Keras 3 functional-API Conv2D on sklearn digits (8x8, 10 classes), one-hot labels with
CategoricalCrossentropy, SGD+momentum with an ExponentialDecay schedule.  Variants:
  healthy         - as designed
  permuted_train  - BUG: training labels randomly permuted (validation labels intact)
  val_shifted     - BUG: validation labels shifted by one class, y_val = (y_val + 1) % 10
usage: python keras_digits_cnn.py OUT_RUNS_DIR VARIANT RUN_NAME
"""
import os
import sys
import common
import numpy as np
import keras

variant, name = sys.argv[2], sys.argv[3]
out = common.run_dir(name)
keras.utils.set_random_seed(42)

C = 10
xtr, xva, ytr, yva = common.digits_split(seed=3)
xtr = (xtr / 16.0)[..., None]
xva = (xva / 16.0)[..., None]
if variant == "permuted_train":
    ytr = np.random.default_rng(0).permutation(ytr)
if variant == "val_shifted":
    yva = (yva + 1) % C
ytr_oh = keras.utils.to_categorical(ytr, C)
yva_oh = keras.utils.to_categorical(yva, C)

inp = keras.Input(shape=(8, 8, 1), name="image")
h = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inp)
h = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(h)
h = keras.layers.MaxPooling2D(2)(h)
h = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(h)
h = keras.layers.Flatten()(h)
h = keras.layers.Dense(64, activation="relu")(h)
outp = keras.layers.Dense(C, activation="softmax", name="digit")(h)
model = keras.Model(inp, outp, name="digits_cnn")

sched = keras.optimizers.schedules.ExponentialDecay(0.02, decay_steps=200, decay_rate=0.85)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=sched, momentum=0.9),
              loss=keras.losses.CategoricalCrossentropy(), metrics=["accuracy"])
os.makedirs(f"{out}/checkpoints")
model.fit(xtr, ytr_oh, validation_data=(xva, yva_oh), epochs=25, batch_size=32, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/history.csv"),
                     keras.callbacks.ModelCheckpoint(f"{out}/checkpoints/epoch_{{epoch:02d}}.keras",
                                                     monitor="val_accuracy", save_best_only=True)])
model.save(f"{out}/final.keras")
