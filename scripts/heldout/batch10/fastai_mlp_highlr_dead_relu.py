# fastai Learner on a hand-made ReLU MLP, trained with a constant LR.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch
torch.set_num_threads(1)
from torch import nn
from pathlib import Path
from fastai.basics import *
from fastai.callback.all import *
from fastai.callback.tensorboard import TensorBoardCallback

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
LR = float(os.environ.get("LR", "0.5"))
set_seed(0)
g = torch.Generator().manual_seed(0)
n, d, k = 5000, 20, 5
W = torch.randn(d, k, generator=g)
X = torch.randn(n, d, generator=g)
y = (torch.tanh(X @ W) + 0.3 * torch.randn(n, k, generator=g)).argmax(1)
tr = list(zip(X[:4000], y[:4000])); va = list(zip(X[4000:], y[4000:]))
dls = DataLoaders.from_dsets(tr, va, bs=64)
model = nn.Sequential(nn.Linear(d, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                      nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, k))
learn = Learner(dls, model, loss_func=CrossEntropyLossFlat(), metrics=accuracy, path=out,
                opt_func=partial(SGD, mom=0.9),
                cbs=[CSVLogger(fname="history.csv"),
                     SaveModelCallback(monitor="valid_loss", every_epoch=True, with_opt=True, fname="mlp"),
                     TensorBoardCallback(log_dir=out / "tb", trace_model=False, log_preds=False)])
with learn.no_bar():
    learn.fit(10, lr=LR)
