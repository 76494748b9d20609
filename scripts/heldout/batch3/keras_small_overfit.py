"""Keras 3 functional MLP on a deliberately small training set (200 samples, 30 features, 4
classes; make_classification flip_y=0.4 so ~30% of labels are wrong in train AND val) with a wide
network (2x512) and no regularisation: validation accuracy rises for ~10 epochs, peaks, then
declines as the network memorises the training set (train acc -> 1.0).
usage: python keras_small_overfit.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import keras
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(13)

x, y = make_classification(n_samples=1400, n_features=30, n_informative=6, n_redundant=0,
                           n_classes=4, n_clusters_per_class=1, flip_y=0.4, class_sep=2.0,
                           random_state=13)
xtr, xva, ytr, yva = train_test_split(x.astype("float32"), y, train_size=200, random_state=13, stratify=y)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")

inp = keras.Input(shape=(30,))
h = keras.layers.Dense(512, activation="relu")(inp)
h = keras.layers.Dense(512, activation="relu")(h)
o = keras.layers.Dense(4, activation="softmax")(h)
model = keras.Model(inp, o)
model.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=60, batch_size=16, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/metrics.csv"),
                     keras.callbacks.ModelCheckpoint(f"{out}/best_val_acc.keras", monitor="val_accuracy",
                                                     mode="max", save_best_only=True)])
model.save(f"{out}/last.keras")
