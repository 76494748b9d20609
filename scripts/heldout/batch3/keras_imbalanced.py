"""Keras 3 Sequential MLP, 3 classes with 90/5/5 class imbalance, RMSprop with a small lr.
Output bias initialised to log class priors, so accuracy is ~0.9 from the first epoch
(majority class) and improves slowly.
usage: python keras_imbalanced.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import keras
from sklearn.preprocessing import StandardScaler

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(8)

xtr, xva, ytr, yva = common.tabular(n=6000, n_features=24, n_informative=8, n_classes=3,
                                    weights=[0.9, 0.05, 0.05], seed=21, class_sep=1.0)
sc = StandardScaler().fit(xtr)
xtr, xva = sc.transform(xtr).astype("float32"), sc.transform(xva).astype("float32")

prior = np.bincount(ytr, minlength=3) / len(ytr)
model = keras.Sequential([
    keras.Input(shape=(24,)),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(32, activation="relu"),
    # output bias initialised to the log class priors (standard practice for imbalanced data)
    keras.layers.Dense(3, activation="softmax",
                       bias_initializer=keras.initializers.Constant(np.log(prior))),
], name="imbalanced_mlp")
model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=3e-4),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=25, batch_size=128, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(f"{out}/log.csv"),
                     keras.callbacks.ModelCheckpoint(f"{out}/model.keras")])
