# HEALTHY: Keras 3 (torch backend) ReLU MLP on a small noisy regression set, EarlyStopping with
# restore_best_weights; the final saved model is therefore the same weights as the best checkpoint.
import os, sys
os.environ["KERAS_BACKEND"] = "torch"; os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch
torch.set_num_threads(1)
import keras
from keras import layers

out = sys.argv[1]; os.makedirs(out + "/checkpoints", exist_ok=True)
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
d = 16
w = rng.normal(size=(d,))
def make(n):
    X = rng.normal(size=(n, d)).astype("float32")
    y = (np.sin(X @ w / 2) + 0.3 * X[:, 0] ** 2 + 0.4 * rng.normal(size=n)).astype("float32")
    return X, y[:, None]
Xtr, ytr = make(600); Xva, yva = make(400)
model = keras.Sequential([keras.Input((d,)), layers.Dense(256, activation="relu"),
                          layers.Dense(256, activation="relu"), layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="mse", metrics=["mae"])
cbs = [keras.callbacks.CSVLogger(os.path.join(out, "training_log.csv")),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "checkpoints", "epoch_{epoch:03d}.weights.h5"), save_weights_only=True),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "best.keras"), monitor="val_loss", save_best_only=True),
       keras.callbacks.EarlyStopping(monitor="val_loss", patience=6, restore_best_weights=True, verbose=1)]
model.fit(Xtr, ytr, validation_data=(Xva, yva), epochs=80, batch_size=32, callbacks=cbs, verbose=2)
model.save(os.path.join(out, "final.keras"))
