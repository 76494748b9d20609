"""Keras 3 Sequential MLP on tabular 'sensor' data (8 classes, raw features with large offsets,
StandardScaler fitted on train).  Variants (each a single change to the healthy one):
  healthy              - as designed
  val_unscaled         - BUG: validation inputs are not passed through the scaler
  softmax_fromlogits   - BUG: softmax output layer + SparseCategoricalCrossentropy(from_logits=True)
  linear_probs         - BUG: linear output layer + SparseCategoricalCrossentropy() (from_logits=False)
  lr_too_high          - BUG: Adam learning_rate=1.0
usage: python keras_sensors_mlp.py OUT_RUNS_DIR VARIANT RUN_NAME
"""
import sys
import common
import numpy as np
import keras
from sklearn.preprocessing import StandardScaler

variant, name = sys.argv[2], sys.argv[3]
out = common.run_dir(name)
keras.utils.set_random_seed(1234)

C = 8
xtr, xva, ytr, yva = common.tabular(n=4000, n_features=16, n_informative=10, n_classes=C,
                                    seed=7, class_sep=1.2)
rng = np.random.default_rng(7)
offsets = rng.uniform(20, 500, size=16).astype("float32")
scales = rng.uniform(1, 30, size=16).astype("float32")
xtr = xtr * scales + offsets   # raw sensor readings
xva = xva * scales + offsets

scaler = StandardScaler().fit(xtr)
xtr_s = scaler.transform(xtr).astype("float32")
xva_s = scaler.transform(xva).astype("float32")
if variant == "val_unscaled":
    xva_s = xva.astype("float32")

out_act = None if variant == "linear_probs" else "softmax"
model = keras.Sequential([
    keras.Input(shape=(16,)),
    keras.layers.Dense(128, activation="relu"),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(C, activation=out_act),
])
lr = 1.0 if variant == "lr_too_high" else 1e-3
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=(variant == "softmax_fromlogits"))
model.compile(optimizer=keras.optimizers.Adam(learning_rate=lr), loss=loss, metrics=["accuracy"])
model.fit(xtr_s, ytr, validation_data=(xva_s, yva), epochs=20, batch_size=64, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/training.log"),
                     keras.callbacks.ModelCheckpoint(f"{out}/best.keras", monitor="val_loss",
                                                     save_best_only=True)])
