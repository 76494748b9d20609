# fastai tabular_learner on a synthetic tabular dataset; heavy regularisation:
# dropout p=0.5 in every hidden layer + label smoothing eps=0.2. Epoch-level CSVLogger.
import sys, os
import numpy as np, pandas as pd, torch
from fastai.tabular.all import *

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)
set_seed(7, reproducible=True)
rng = np.random.default_rng(7)
n = 9000
df = pd.DataFrame({f"x{i}": rng.normal(size=n) for i in range(12)})
df["region"] = rng.choice(["north", "south", "east", "west"], n)
df["plan"] = rng.choice(["basic", "plus", "pro"], n)
score = (1.2 * df.x0 - 0.8 * df.x1 * df.x2 + np.sin(2 * df.x3) + 0.6 * (df.region == "east")
         - 0.7 * (df.plan == "basic") + rng.normal(0, 0.7, n))
df["churn"] = pd.cut(score, [-np.inf, -0.7, 0.7, np.inf], labels=["low", "mid", "high"]).astype(str)

splits = RandomSplitter(valid_pct=0.2, seed=1)(range_of(df))
to = TabularPandas(df, procs=[Categorify, Normalize], cat_names=["region", "plan"],
                   cont_names=[f"x{i}" for i in range(12)], y_names="churn",
                   y_block=CategoryBlock(), splits=splits)
dls = to.dataloaders(bs=128)
learn = tabular_learner(dls, layers=[256, 128], config=tabular_config(ps=0.5, embed_p=0.1),
                        loss_func=LabelSmoothingCrossEntropyFlat(eps=0.2), metrics=accuracy,
                        path=out, cbs=[CSVLogger(fname="history.csv")])
with learn.no_bar():
    learn.fit_one_cycle(12, lr_max=3e-3, wd=0.1)
learn.save("model")
