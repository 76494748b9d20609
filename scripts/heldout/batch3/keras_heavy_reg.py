"""Keras 3 Sequential MLP, 20 classes (make_blobs), strong regularisation: GaussianNoise on the
input (train-time only) and Dropout(0.5) after every hidden layer.  Because training metrics are
computed with noise+dropout active, validation accuracy sits above training accuracy.
Step-decay LearningRateScheduler.
usage: python keras_heavy_reg.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import keras
from sklearn.datasets import make_blobs
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(20)

C = 20
x, y = make_blobs(n_samples=4000, n_features=16, centers=C, cluster_std=5.5, random_state=20)
xtr, xva, ytr, yva = train_test_split(x.astype("float32"), y, test_size=0.25, random_state=20, stratify=y)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")

model = keras.Sequential([
    keras.Input(shape=(16,)),
    keras.layers.GaussianNoise(0.6),
    keras.layers.Dense(256, activation="relu"),
    keras.layers.Dropout(0.5),
    keras.layers.Dense(256, activation="relu"),
    keras.layers.Dropout(0.5),
    keras.layers.Dense(C, activation="softmax"),
], name="regularised_mlp")
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=25, batch_size=64, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/epochs.csv"),
                     keras.callbacks.LearningRateScheduler(lambda e, lr: 1e-3 * (0.5 ** (e // 10))),
                     keras.callbacks.ModelCheckpoint(f"{out}/weights_best.keras", monitor="val_acc",
                                                     mode="max", save_best_only=True)])
