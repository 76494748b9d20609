"""Keras 3 (torch backend) tabular MLP: pretrain on a source task, then fine-tune on a related target task.

Healthy run. base/ holds the locally saved start weights (base_model.keras + its CSV log);
finetune/ holds the per-epoch CSVLogger log, the best and last .keras checkpoints.
Fine-tuning: stage 1 trains only the new head (backbone frozen), stage 2 unfreezes with a lower LR
(appended to the same CSV log).
"""
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np
import keras
from keras import layers
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

out = sys.argv[1]
os.makedirs(os.path.join(out, "base"), exist_ok=True)
os.makedirs(os.path.join(out, "finetune"), exist_ok=True)
keras.utils.set_random_seed(0)

# source and target share the informative feature space (same generator seed), labels differ in granularity
Xs, ys = make_classification(n_samples=6000, n_features=32, n_informative=12, n_redundant=6, n_classes=6,
                             n_clusters_per_class=2, class_sep=1.2, random_state=7)
# target task: a smaller labelled set with coarser labels derived from the same clusters, plus label noise
rng = np.random.default_rng(1)
Xt, yt6 = make_classification(n_samples=1500, n_features=32, n_informative=12, n_redundant=6, n_classes=6,
                              n_clusters_per_class=2, class_sep=1.2, random_state=7, shuffle=True)
yt = yt6 % 3
flip = rng.random(len(yt)) < 0.05
yt[flip] = rng.integers(0, 3, flip.sum())
mu, sd = Xs.mean(0), Xs.std(0) + 1e-6
Xs, Xt = ((Xs - mu) / sd).astype("float32"), ((Xt - mu) / sd).astype("float32")

# ---- pretraining on the source task ----
inp = keras.Input((32,), name="features")
h = layers.Dense(128, activation="relu", name="enc1")(inp)
h = layers.Dropout(0.1)(h)
h = layers.Dense(64, activation="relu", name="enc2")(h)
src_out = layers.Dense(6, name="src_head")(h)
base = keras.Model(inp, src_out, name="base")
base.compile(optimizer=keras.optimizers.Adam(1e-3),
             loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
base.fit(Xs, ys, validation_split=0.15, epochs=15, batch_size=64, verbose=2,
         callbacks=[keras.callbacks.CSVLogger(os.path.join(out, "base", "pretrain_log.csv"))])
base.save(os.path.join(out, "base", "base_model.keras"))

# ---- fine-tuning from the saved start weights ----
start = keras.models.load_model(os.path.join(out, "base", "base_model.keras"))
backbone = keras.Model(start.input, start.get_layer("enc2").output, name="backbone")
x = keras.Input((32,), name="features")
z = backbone(x)
z = layers.Dropout(0.2)(z)
y = layers.Dense(3, name="tgt_head")(z)
model = keras.Model(x, y, name="finetuned")

Xtr, Xva, ytr, yva = train_test_split(Xt, yt, test_size=0.25, random_state=0, stratify=yt)
log = os.path.join(out, "finetune", "training_log.csv")
ck_best = keras.callbacks.ModelCheckpoint(os.path.join(out, "finetune", "best.keras"), monitor="val_loss",
                                          save_best_only=True)

backbone.trainable = False
model.compile(optimizer=keras.optimizers.Adam(2e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(Xtr, ytr, validation_data=(Xva, yva), epochs=8, batch_size=32, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(log), ck_best])

backbone.trainable = True
model.compile(optimizer=keras.optimizers.Adam(2e-4),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(Xtr, ytr, validation_data=(Xva, yva), initial_epoch=8, epochs=30, batch_size=32, verbose=2,
          callbacks=[keras.callbacks.CSVLogger(log, append=True), ck_best])
model.save(os.path.join(out, "finetune", "last.keras"))
print("final val:", model.evaluate(Xva, yva, verbose=0))
