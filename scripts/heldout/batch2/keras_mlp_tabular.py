# Keras 3 (torch backend) MLP on a synthetic tabular task (sklearn make_classification),
# epoch-level log via CSVLogger("log.csv").
# --shuffle-train-labels: BUG twin (y_train permuted before fit; validation labels untouched).
import os, argparse
os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np, torch
torch.set_num_threads(1)
import keras
from keras import layers
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--shuffle-train-labels", action="store_true")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
keras.utils.set_random_seed(1)

X, y = make_classification(n_samples=8000, n_features=40, n_informative=15, n_redundant=10,
                           n_classes=3, n_clusters_per_class=2, class_sep=1.0, flip_y=0.03,
                           random_state=42)
X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=0)
sc = StandardScaler().fit(X_train)
X_train, X_val = sc.transform(X_train), sc.transform(X_val)
if a.shuffle_train_labels:
    y_train = np.random.default_rng(0).permutation(y_train)

model = keras.Sequential([
    keras.Input((40,)),
    layers.Dense(128, activation="relu"),
    layers.Dropout(0.2),
    layers.Dense(64, activation="relu"),
    layers.Dense(3, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=30, batch_size=64, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(os.path.join(a.out, "log.csv"))])
model.save(os.path.join(a.out, "model.keras"))
