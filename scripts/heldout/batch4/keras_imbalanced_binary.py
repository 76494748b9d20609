"""Keras (torch backend) binary classifier on a heavily imbalanced synthetic 'fraud' table
(~4% positives), sigmoid output + binary cross-entropy, metrics accuracy / AUC / recall.
CSVLogger + EarlyStopping(restore_best_weights) on val AUC + ModelCheckpoint (weights .h5).
HEALTHY: accuracy is ~0.96 from the first epoch (majority class), the informative metrics
(AUC, recall) and both losses improve steadily; losses are small because most samples are easy.
usage: python keras_imbalanced_binary.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os
import common
import numpy as np
import keras
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(808)

xtr, xva, ytr, yva = common.tabular(n=12000, n_features=20, n_informative=8, n_classes=2, seed=77,
                                    weights=[0.96, 0.04], class_sep=0.9, flip_y=0.01, test_size=0.25)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr), sc.transform(xva)
ytr, yva = ytr.astype("float32"), yva.astype("float32")

model = keras.Sequential([keras.Input((20,)),
                          keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dropout(0.2),
                          keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=keras.optimizers.Adam(5e-4), loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.AUC(name="auc"), keras.metrics.Recall(name="recall")])
cbs = [keras.callbacks.CSVLogger(os.path.join(out, "log.csv")),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "ckpt", "epoch{epoch:02d}.weights.h5"),
                                       save_weights_only=True, monitor="val_auc", mode="max", save_best_only=True),
       keras.callbacks.EarlyStopping(monitor="val_auc", mode="max", patience=8, restore_best_weights=True)]
os.makedirs(os.path.join(out, "ckpt"))
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=40, batch_size=128, callbacks=cbs, verbose=2)
model.save(os.path.join(out, "fraud_mlp.keras"))
print("positives train/val:", float(ytr.mean()), float(yva.mean()))
