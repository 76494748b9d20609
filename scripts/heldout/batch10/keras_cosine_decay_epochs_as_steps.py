# Keras 3 (torch backend) small CNN classifier on synthetic 12x12 images, Adam + CosineDecay schedule.
import os, sys
os.environ["KERAS_BACKEND"] = "torch"; os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch
torch.set_num_threads(1)
import keras
from keras import layers

out = sys.argv[1]; os.makedirs(out + "/checkpoints", exist_ok=True)
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
def make(n):
    y = rng.integers(0, 4, n)
    X = rng.normal(0, 0.8, size=(n, 12, 12, 1)).astype("float32")
    for i, c in enumerate(y):
        p = rng.integers(2, 10)
        if c == 0: X[i, p, :, 0] += 1.5
        elif c == 1: X[i, :, p, 0] += 1.5
        elif c == 2: X[i, np.arange(12), np.arange(12), 0] += 1.5
        else: X[i, np.arange(12), 11 - np.arange(12), 0] += 1.5
    return X, y
Xtr, ytr = make(3200); Xva, yva = make(800)
EPOCHS = 20
steps_per_epoch = len(Xtr) // 64
schedule = keras.optimizers.schedules.CosineDecay(initial_learning_rate=1e-2, decay_steps=int(os.environ.get("DECAY_STEPS", EPOCHS)))  # anneal over the run
model = keras.Sequential([keras.Input((12, 12, 1)), layers.Conv2D(8, 3, activation="relu"),
                          layers.MaxPooling2D(), layers.Conv2D(16, 3, activation="relu"),
                          layers.GlobalAveragePooling2D(), layers.Dense(4)])
model.compile(optimizer=keras.optimizers.Adam(schedule),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
cbs = [keras.callbacks.CSVLogger(os.path.join(out, "training_log.csv")),
       keras.callbacks.ModelCheckpoint(os.path.join(out, "checkpoints", "epoch_{epoch:03d}.keras"))]
model.fit(Xtr, ytr, validation_data=(Xva, yva), epochs=EPOCHS, batch_size=64, callbacks=cbs, verbose=2)
