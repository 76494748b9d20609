"""Generate small Keras 3 (torch backend) training runs with Keras's own callbacks.

Usage: /work/venv-field/bin/python /work/newfw/scripts/keras_runs.py [run_name ...]
Runs are written to /work/newfw/runs/keras_<name>/ ; files are left exactly as Keras wrote them.
"""
import os
os.environ["KERAS_BACKEND"] = "torch"
import sys, shutil, math, json, tempfile, traceback
import numpy as np
import torch
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
import keras
from keras import layers

from common import OUT, record, versions

RUNS = str(OUT)
N_CLASSES, DIM = 10, 32
N_TRAIN, N_VAL = 3000, 1000
BATCH = 64
EPOCHS = 25


def make_cls_data(seed=0):
    """10 classes, each a mixture of 2 Gaussian clusters in 32-d (not linearly trivial)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 0.8, size=(N_CLASSES, 2, DIM)).astype("float32")
    def sample(n):
        y = rng.integers(0, N_CLASSES, size=n)
        k = rng.integers(0, 2, size=n)
        x = centers[y, k] + rng.normal(0, 1.0, size=(n, DIM)).astype("float32")
        return x.astype("float32"), y.astype("int64")
    return sample(N_TRAIN), sample(N_VAL)


def make_reg_data(seed=1):
    """y = smooth nonlinear function of 16-d x plus small noise."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 1, size=(16,)).astype("float32")
    w2 = rng.normal(0, 1, size=(16,)).astype("float32")
    def sample(n):
        x = rng.normal(0, 1, size=(n, 16)).astype("float32")
        y = np.sin(x @ w1 / 2) + 0.5 * (x @ w2 / 4) ** 2 + 0.1 * rng.normal(size=n)
        return x, y.astype("float32")[:, None]
    return sample(N_TRAIN), sample(N_VAL)


def cls_model():
    return keras.Sequential([
        keras.Input((DIM,)),
        layers.Dense(64, activation="relu", name="dense_1"),
        layers.Dense(64, activation="relu", name="dense_2"),
        layers.Dense(N_CLASSES, name="logits"),
    ], name="mlp_classifier")


def reg_model():
    return keras.Sequential([
        keras.Input((16,)),
        layers.Dense(64, activation="relu", name="hidden_1"),
        layers.Dense(32, activation="relu", name="hidden_2"),
        layers.Dense(1, name="out"),
    ], name="mlp_regressor")


def fresh_dir(name):
    d = os.path.join(RUNS, f"keras_{name}")
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def probe_tensorboard():
    """Try keras.callbacks.TensorBoard without tensorflow installed; return error text or None."""
    keras.utils.set_random_seed(0)
    (xt, yt), (xv, yv) = make_cls_data()
    m = cls_model()
    m.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    tmp = tempfile.mkdtemp(prefix="keras_tb_probe_")
    try:
        m.fit(xt[:256], yt[:256], validation_data=(xv[:64], yv[:64]), epochs=1,
              batch_size=BATCH, verbose=0,
              callbacks=[keras.callbacks.TensorBoard(log_dir=os.path.join(tmp, "tb"))])
        return None, sorted(os.path.relpath(os.path.join(r, f), tmp)
                            for r, _, fs in os.walk(tmp) for f in fs)
    except Exception as e:
        return "".join(traceback.format_exception_only(type(e), e)).strip(), \
            sorted(os.path.relpath(os.path.join(r, f), tmp) for r, _, fs in os.walk(tmp) for f in fs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_classifier(name, peak_lr=2e-3, shuffle_labels=False):
    """Healthy config: Adam + CosineDecay with linear warmup, sparse CE from logits."""
    d = fresh_dir(name)
    keras.utils.set_random_seed(42)
    (xt, yt), (xv, yv) = make_cls_data()
    if shuffle_labels:  # the bug: train labels permuted (val labels untouched)
        yt = np.random.default_rng(123).permutation(yt)
    steps_per_epoch = math.ceil(N_TRAIN / BATCH)
    total = steps_per_epoch * EPOCHS
    warm = steps_per_epoch * 2
    sched = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0, decay_steps=total - warm, alpha=0.01,
        warmup_target=peak_lr, warmup_steps=warm)
    m = cls_model()
    m.compile(optimizer=keras.optimizers.Adam(learning_rate=sched),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    os.makedirs(os.path.join(d, "checkpoints"))
    cbs = [
        # every fifth epoch (save_freq counts batches)
        keras.callbacks.ModelCheckpoint(os.path.join(d, "checkpoints", "epoch_{epoch:02d}.keras"),
                                        save_freq=5 * steps_per_epoch),
        keras.callbacks.ModelCheckpoint(os.path.join(d, "best.weights.h5"), monitor="val_accuracy",
                                        mode="max", save_best_only=True, save_weights_only=True),
        keras.callbacks.BackupAndRestore(os.path.join(d, "backup"), delete_checkpoint=False),
        keras.callbacks.CSVLogger(os.path.join(d, "training.log")),
    ]
    m.fit(xt, yt, validation_data=(xv, yv), epochs=EPOCHS, batch_size=BATCH, verbose=2, callbacks=cbs)
    m.save(os.path.join(d, "final.keras"))


def run_regressor(name, lr=0.01):
    """Healthy config: SGD momentum 0.9 + LearningRateScheduler step decay, mse loss."""
    d = fresh_dir(name)
    keras.utils.set_random_seed(7)
    (xt, yt), (xv, yv) = make_reg_data()
    m = reg_model()
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=lr, momentum=0.9),
              loss="mse", metrics=["mae"])
    def step_decay(epoch, cur_lr):
        return lr * (0.5 ** (epoch // 10))
    os.makedirs(os.path.join(d, "ckpt"))
    cbs = [
        keras.callbacks.LearningRateScheduler(step_decay),
        keras.callbacks.ModelCheckpoint(os.path.join(d, "ckpt", "weights_epoch{epoch:02d}.weights.h5"),
                                        save_weights_only=True, save_freq=5 * math.ceil(N_TRAIN / BATCH)),
        keras.callbacks.ModelCheckpoint(os.path.join(d, "best.keras"), monitor="val_loss",
                                        save_best_only=True),
        keras.callbacks.CSVLogger(os.path.join(d, "history.csv")),
    ]
    m.fit(xt, yt, validation_data=(xv, yv), epochs=EPOCHS, batch_size=BATCH, verbose=2, callbacks=cbs)
    m.save(os.path.join(d, "final.keras"))


RUN_TABLE = {
    "healthy_adam_cosine": lambda: run_classifier("healthy_adam_cosine"),
    "healthy_sgd_regression": lambda: run_regressor("healthy_sgd_regression"),
    "lr_100x": lambda: run_classifier("lr_100x", peak_lr=2e-3 * 100),
    "labels_shuffled": lambda: run_classifier("labels_shuffled", shuffle_labels=True),
}


# What `check` should name on each run (an empty list: a healthy run, 0 fail and 0 warn).
ANSWERS = {
    "healthy_adam_cosine": ([], None),
    "healthy_sgd_regression": ([], None),
    "lr_100x": (["S4.1", "O22", "S3.1", "S3.2", "O25"],
                "CosineDecay warmup_target 0.2, 100x the healthy 2e-3: val acc 0.82 after epoch 0, then the "
                "model collapses: loss 2.30 (ln 10) and val acc 0.12 from epoch 10, every sample predicted class 0"),
    "labels_shuffled": (["F12", "F13", "V1"],
                        "training labels permuted (val labels intact): train loss 2.44 -> 1.75 (memorised), "
                        "val loss 2.37 -> 2.50, val acc at chance (0.106)"),
}


def summarize():
    """Read the runs back from disk (CSV logs, file sizes, optimizer iteration counters)."""
    import csv, glob, h5py
    for d in sorted(glob.glob(os.path.join(RUNS, "keras_*"))):
        log = next(p for p in (os.path.join(d, "training.log"), os.path.join(d, "history.csv")) if os.path.exists(p))
        rows = list(csv.DictReader(open(log)))
        cols = list(rows[0])
        val = lambda k: [float(r[k]) for r in rows]
        out = {"run": os.path.basename(d), "log": os.path.basename(log), "columns": cols, "epochs": len(rows),
               "first_loss": val("loss")[0], "last_loss": val("loss")[-1],
               "min_val_loss": min(val("val_loss")), "last_val_loss": val("val_loss")[-1],
               "any_nan_or_inf": any(not math.isfinite(float(v)) for r in rows for v in r.values())}
        for k in ("val_accuracy", "val_mae"):
            if k in cols:
                out["first_" + k], out["last_" + k], out["best_" + k] = val(k)[0], val(k)[-1], (max if "acc" in k else min)(val(k))
        if "learning_rate" in cols:
            out["learning_rate_range"] = [min(val("learning_rate")), max(val("learning_rate"))]
        for b in ("best.weights.h5",):
            if os.path.exists(os.path.join(d, b)):
                with h5py.File(os.path.join(d, b)) as h:
                    out["best.weights.h5_optimizer_iterations"] = int(h["optimizer/vars/0"][()])
        out["files"] = {os.path.relpath(os.path.join(r, f), d): os.path.getsize(os.path.join(r, f))
                        for r, _, fs in sorted(os.walk(d)) for f in sorted(fs)}
        print(json.dumps(out))


if __name__ == "__main__":
    names = sys.argv[1:] or list(RUN_TABLE)
    for n in names:
        if n == "summarize":
            summarize()
            continue
        if n == "tb_probe":
            err, files = probe_tensorboard()
            print(json.dumps({"tensorboard_error": err, "files_written": files}, indent=1))
            continue
        print(f"=== keras_{n} ===", flush=True)
        RUN_TABLE[n]()
        accept, bug = ANSWERS[n]
        record(f"keras_{n}", versions("torch", "keras"), bug, accept,
               profile={"resumed_at": None, "init_checkpoint": False})
