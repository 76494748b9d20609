"""Generate fastai 2.8 training runs (synthetic tabular data, tabular_learner, CPU).

Usage: /work/venv-field/bin/python fastai_runs.py <run_name> [<run_name> ...]
Runs: fastai_healthy_onecycle_adam, fastai_healthy_sgd_constant,
      fastai_lr_100x, fastai_lr_1e-7

Each run writes (framework output only) to /work/newfw/runs/<run_name>/ (Learner.path):
  history.csv                      CSVLogger
  models/model.pth                 SaveModelCallback(monitor='accuracy', with_opt=True)
  runs/<date>_<host>/events...     TensorBoardCallback() default log_dir (SummaryWriter default,
                                   relative to the cwd, which is the run dir)
"""
import os
import sys
import shutil

for k, v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_PROXY": "*",
             "FASTAI_HOME": "/tmp/fastai_home_newfw", "MPLBACKEND": "Agg"}.items():
    os.environ.setdefault(k, v)

import torch

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

import numpy as np
import pandas as pd
import fastai
from fastai.tabular.all import (TabularDataLoaders, tabular_learner, Categorify, FillMissing,
                                Normalize, CategoryBlock, accuracy, CSVLogger, SaveModelCallback,
                                SGD, Adam)
from fastai.callback.tensorboard import TensorBoardCallback
from functools import partial

from common import OUT, record, run_dir, versions

ROOT = str(OUT)
N_CLASSES = 5
CONT = [f"x{i}" for i in range(8)]
CAT = ["color", "shape"]


def make_df(seed=0, n=5000, noise=0.15):
    """Teacher: random 2-layer tanh net on 8 cont features + per-category offsets; argmax of noisy
    logits gives one of 5 classes. First 4000 rows train, last 1000 valid."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(CONT)))
    color = rng.integers(0, 6, n)
    shape = rng.integers(0, 3, n)
    W1 = rng.normal(size=(len(CONT), 16))
    W2 = rng.normal(size=(16, N_CLASSES))
    e_color = rng.normal(size=(6, N_CLASSES)) * 0.8
    e_shape = rng.normal(size=(3, N_CLASSES)) * 0.8
    logits = np.tanh(X @ W1) @ W2 + e_color[color] + e_shape[shape]
    logits += noise * rng.normal(size=logits.shape) * logits.std()
    y = logits.argmax(1)
    df = pd.DataFrame(X, columns=CONT)
    df["color"] = np.array(["red", "green", "blue", "cyan", "magenta", "yellow"])[color]
    df["shape"] = np.array(["circle", "square", "triangle"])[shape]
    df["label"] = np.array([f"class_{c}" for c in range(N_CLASSES)])[y]
    return df


HEALTHY_ONECYCLE = dict(opt="adam", schedule="one_cycle", lr=1e-2, epochs=15)
HEALTHY_SGD = dict(opt="sgd_mom", schedule="constant", lr=5e-2, epochs=15)

CONFIGS = {
    "fastai_healthy_onecycle_adam": dict(HEALTHY_ONECYCLE),
    "fastai_healthy_sgd_constant": dict(HEALTHY_SGD),
    # single change from fastai_healthy_onecycle_adam: lr_max 1e-2 -> 1.0
    "fastai_lr_100x": dict(HEALTHY_ONECYCLE, lr=HEALTHY_ONECYCLE["lr"] * 100),
    # single change from fastai_healthy_onecycle_adam: lr_max 1e-2 -> 1e-7
    "fastai_lr_1e-7": dict(HEALTHY_ONECYCLE, lr=1e-7),
}


def run(name):
    cfg = CONFIGS[name]
    out = str(run_dir(name))
    here = os.getcwd()
    os.chdir(out)  # TensorBoardCallback() with default log_dir writes to ./runs/<date>_<host>

    torch.manual_seed(0)
    np.random.seed(0)
    df = make_df(seed=0)
    dls = TabularDataLoaders.from_df(
        df, path=out, procs=[Categorify, FillMissing, Normalize], cat_names=CAT, cont_names=CONT,
        y_names="label", y_block=CategoryBlock(), valid_idx=list(range(4000, 5000)), bs=64,
        num_workers=0)
    opt_func = Adam if cfg["opt"] == "adam" else partial(SGD, mom=0.9)
    learn = tabular_learner(dls, layers=[128, 64], metrics=accuracy, opt_func=opt_func,
                            cbs=[CSVLogger(),
                                 SaveModelCallback(monitor="accuracy", with_opt=True),
                                 TensorBoardCallback(trace_model=False, log_preds=False)])
    print(f"[{name}] torch {torch.__version__} fastai {fastai.__version__} cfg={cfg} "
          f"train_batches={len(dls.train)} valid_batches={len(dls.valid)}", flush=True)
    with learn.no_bar():
        if cfg["schedule"] == "one_cycle":
            learn.fit_one_cycle(cfg["epochs"], lr_max=cfg["lr"])
        else:
            learn.fit(cfg["epochs"], lr=cfg["lr"])
    print(f"[{name}] done; recorder.values[-1]={learn.recorder.values[-1]}", flush=True)
    os.chdir(here)
    accept, bug = ANSWERS[name]
    record(name, versions("torch", "fastai"), bug, accept,
           profile={"resumed_at": None, "init_checkpoint": False})


# What `check` should name on each run (an empty list: a healthy run, 0 fail and 0 warn).
ANSWERS = {
    "fastai_healthy_onecycle_adam": ([], None),
    "fastai_healthy_sgd_constant": ([], None),
    "fastai_lr_100x": (["S4.1", "O22", "S3.1", "S3.2"],
                       "fit_one_cycle lr_max 1.0, 100x the healthy 1e-2: the loss climbs to 6.2 (valid 12.5, "
                       "acc 0.32) near the LR peak, then recovers as the LR anneals (final acc 0.742, healthy 0.783)"),
    "fastai_lr_1e-7": (["S4.1", "O7", "S2.1"],
                       "fit_one_cycle lr_max 1e-7: the loss stays at 1.85 from the first step, acc about 0.17"),
}


if __name__ == "__main__":
    for n in sys.argv[1:] or list(CONFIGS):
        run(n)
