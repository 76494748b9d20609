"""Keras (torch backend) MLP on sklearn digits (flattened 8x8, /16), softmax + sparse categorical
cross-entropy, CSVLogger + ModelCheckpoint (best by val_accuracy, .keras).
The author shuffles the training set in place before fitting.
BUG: x_train and y_train are shuffled by two separate np.random.shuffle calls, so every training
image gets a random label (validation labels are intact).
usage: python keras_digits_mlp.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os
import common
import numpy as np
import keras

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(31337)

x_train, x_val, y_train, y_val = common.digits_split(seed=9, test_size=0.25)
x_train = x_train.reshape(len(x_train), -1) / 16.0
x_val = x_val.reshape(len(x_val), -1) / 16.0

# shuffle the training data once up front
np.random.shuffle(x_train)
np.random.shuffle(y_train)

model = keras.Sequential([keras.Input((64,)),
                          keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(128, activation="relu"),
                          keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
cbs = [keras.callbacks.CSVLogger(os.path.join(out, "epochs.csv")),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "digits_best.keras"), monitor="val_accuracy",
                                       mode="max", save_best_only=True)]
model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=40, batch_size=32, callbacks=cbs, verbose=2)
model.save(os.path.join(out, "digits_final.keras"))
