# HEALTHY: fastai tabular classifier trained with fit_one_cycle (LR rises then anneals per batch, as designed).
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, pandas as pd, torch
torch.set_num_threads(1)
from pathlib import Path
from fastai.tabular.all import *
from fastai.callback.tensorboard import TensorBoardCallback

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
set_seed(0)
rng = np.random.default_rng(0)
n = 4000
df = pd.DataFrame({
    "age": rng.uniform(18, 80, n), "income": rng.lognormal(10, 0.5, n),
    "visits": rng.poisson(3, n).astype(float), "score": rng.normal(0, 1, n),
    "region": rng.choice(["n", "s", "e", "w"], n), "plan": rng.choice(["basic", "pro", "max"], n),
})
logit = (0.04 * (df.age - 50) + 0.8 * df.score + 0.3 * (df.visits - 3)
         + df.region.map({"n": 0.5, "s": -0.5, "e": 0.0, "w": 1.0}) + df.plan.map({"basic": -0.7, "pro": 0.2, "max": 0.9}))
df["churn"] = (logit + rng.normal(0, 0.5, n) > 0).astype(int).map({0: "stay", 1: "leave"})
splits = RandomSplitter(valid_pct=0.2, seed=0)(range_of(df))
to = TabularPandas(df, procs=[Categorify, FillMissing, Normalize], cat_names=["region", "plan"],
                   cont_names=["age", "income", "visits", "score"], y_names="churn", splits=splits)
dls = to.dataloaders(bs=64)
learn = tabular_learner(dls, layers=[64, 32], metrics=accuracy, path=out,
                        cbs=[CSVLogger(fname="history.csv"),
                             SaveModelCallback(monitor="valid_loss", every_epoch=True, with_opt=True, fname="model"),
                             TensorBoardCallback(log_dir=out / "tb", trace_model=False, log_preds=False)])
with learn.no_bar():
    learn.fit_one_cycle(8, lr_max=1e-2)
