"""Keras 3 fine-tune. Source task: a small CNN trained on a related domain (digits with random
pixel shifts and heavy Gaussian noise), saved as pretrained_base.keras.  Target task: clean
digits.  The saved model is reloaded, its head
replaced by a new 10-class Dense head, the base is frozen for 4 epochs then unfrozen with a
lower learning rate (CSVLogger append=True, initial_epoch continues the epoch count).
usage: python keras_finetune.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
import keras

name = sys.argv[2]
out = common.run_dir(name)
keras.utils.set_random_seed(5)

xtr, xva, ytr, yva = common.digits_split(seed=11, test_size=0.3)
xtr = (xtr / 16.0)[..., None]
xva = (xva / 16.0)[..., None]

# ---- source task (shifted + noisy digits), trained without logging; only the model file is kept
rng = np.random.default_rng(5)
xsrc = np.stack([np.roll(im, (rng.integers(-1, 2), rng.integers(-1, 2)), axis=(0, 1)) for im in xtr])
xsrc = (xsrc + rng.normal(0, 0.35, size=xsrc.shape)).astype("float32")
inp = keras.Input(shape=(8, 8, 1))
h = keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv1")(inp)
h = keras.layers.Conv2D(64, 3, padding="same", activation="relu", name="conv2")(h)
h = keras.layers.MaxPooling2D(2, name="pool")(h)
h = keras.layers.Flatten(name="flat")(h)
h = keras.layers.Dense(64, activation="relu", name="features")(h)
o = keras.layers.Dense(10, activation="softmax", name="src_head")(h)
base_model = keras.Model(inp, o, name="source_cnn")
base_model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
base_model.fit(xsrc, ytr, epochs=15, batch_size=32, verbose=0)
base_model.save(f"{out}/pretrained_base.keras")

# ---- target task: reload, new head
loaded = keras.models.load_model(f"{out}/pretrained_base.keras")
backbone = keras.Model(loaded.input, loaded.get_layer("features").output, name="backbone")
backbone.trainable = False
x_in = keras.Input(shape=(8, 8, 1), name="image")
z = backbone(x_in, training=False)
y_out = keras.layers.Dense(10, activation="softmax", name="new_head")(z)
model = keras.Model(x_in, y_out, name="finetuned")

log = f"{out}/finetune_log.csv"
ckpt = keras.callbacks.ModelCheckpoint(f"{out}/finetuned_best.keras", monitor="val_acc",
                                       mode="max", save_best_only=True)
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy",
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
model.fit(xtr, ytr, validation_data=(xva, yva), epochs=4, batch_size=32, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(log), ckpt])

backbone.trainable = True
model.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy",
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
model.fit(xtr, ytr, validation_data=(xva, yva), initial_epoch=4, epochs=14, batch_size=32, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(log, append=True), ckpt])
model.save(f"{out}/final.keras")
