"""Regenerates the small framework fixtures read by probes/tests/framework_checkpoints.rs.

Run with a Python that has torch, timm, stable_baselines3 and gymnasium:
    python make_fixtures.py   (writes next to this file)
The numbers the tests assert are printed to answers.json.
"""
import argparse, json, os, pickle, shutil, zipfile

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
answers = {}

def fresh(*parts):
    d = os.path.join(HERE, *parts)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d

# timm: CheckpointSaver writes checkpoint-<epoch>.pth.tar, last.pth.tar, model_best.pth.tar.
from timm.utils import CheckpointSaver
m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4, 2))
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
d = fresh("timm")
args = argparse.Namespace(lr=0.1, epochs=10, batch_size=8, model="tiny")
saver = CheckpointSaver(m, opt, args=args, checkpoint_dir=d, recovery_dir=d, max_history=3)
for ep in range(2):
    m(torch.randn(2, 3, 3, 3)).sum().backward(); opt.step()
    saver.save_checkpoint(ep, metric=[0.9, 0.5][ep])  # epoch 0 scores best: model_best = epoch 0
answers["timm_linear_weight_sum"] = float(m[3].weight.sum())

# Ultralytics-shaped checkpoints: whole nn.Modules pickled under `ema` / `model`.
class Conv(nn.Module):
    def __init__(s, a, b):
        super().__init__(); s.conv = nn.Conv2d(a, b, 3); s.bn = nn.BatchNorm2d(b); s.act = nn.SiLU()
class Detect(nn.Module):
    def __init__(s):
        super().__init__(); s.cv = nn.Conv2d(4, 4, 1)
        s.anchors = torch.empty(0); s.strides = torch.empty(0)  # plain attributes: never weights
        s.register_buffer("anchor_grid", torch.zeros(1, 2))
class DetModel(nn.Module):
    def __init__(s):
        super().__init__(); s.model = nn.Sequential(Conv(3, 4), Detect())
        s.stride = torch.tensor([8., 16., 32.]); s.names = {0: "a"}
dm, ema = DetModel(), DetModel()
opt = torch.optim.AdamW(dm.parameters(), lr=1e-3)
d = fresh("ultralytics", "weights")
ta = {"epochs": 5, "lr0": 0.01, "lrf": 0.01, "momentum": 0.937, "weight_decay": 0.0005,
      "warmup_epochs": 3.0, "batch": 16, "imgsz": 640, "optimizer": "auto"}
base = {"date": "2026", "version": "8.3.0", "license": "AGPL", "docs": "x", "best_fitness": 0.5,
        "updates": 10, "train_args": ta, "train_metrics": {}, "train_results": {}}
torch.save(dict(base, epoch=2, model=None, ema=ema, optimizer=opt.state_dict()), os.path.join(d, "epoch2.pt"))
torch.save(dict(base, epoch=3, model=None, ema=ema, optimizer=opt.state_dict()), os.path.join(d, "last.pt"))
torch.save(dict(base, epoch=-1, model=ema, ema=None, optimizer=None), os.path.join(d, "best.pt"))
answers["ulike_conv_weight_sum"] = float(ema.model[0].conv.weight.sum())

# Stable-Baselines3: CheckpointCallback archives + VecNormalize pickles, then the final model.
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
d = fresh("sb3")
env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0), gamma=0.98)
model = PPO("MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=2, learning_rate=3e-4, gamma=0.98,
            policy_kwargs=dict(net_arch=[8]), seed=0)
cb = CheckpointCallback(save_freq=32, save_path=os.path.join(d, "checkpoints"), save_vecnormalize=True)
model.learn(128, callback=cb)
model.save(os.path.join(d, "ppo_cartpole"))
env.save(os.path.join(d, "vec_normalize.pkl"))
with open(os.path.join(d, "vec_normalize_p2.pkl"), "wb") as f:
    pickle.dump(env, f, protocol=2)
with open(os.path.join(d, "vec_normalize_p5.pkl"), "wb") as f:
    pickle.dump(env, f, protocol=5)
answers.update(obs_mean=env.obs_rms.mean.tolist(), obs_var=env.obs_rms.var.tolist(),
               obs_count=env.obs_rms.count, ret_count=env.ret_rms.count,
               num_timesteps=model.num_timesteps, n_updates=model._n_updates)

# CleanRL: torch.save(agent.state_dict(), "runs/<name>/<algo>.cleanrl_model").
d = fresh("cleanrl")
torch.save(m.state_dict(), os.path.join(d, "ppo.cleanrl_model"))

# Hostile: an SB3-shaped zip whose policy.pth is a deflated 64 MiB member (never inflated), and
# a module graph with a cycle (a child that is its parent).
d = fresh("hostile")
with zipfile.ZipFile(os.path.join(d, "bomb.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("data", json.dumps({"num_timesteps": 5}))
    z.writestr("policy.pth", b"\0" * (64 << 20))
cyc = DetModel(); cyc.model._modules["loop"] = cyc
torch.save({"epoch": 1, "model": cyc}, os.path.join(d, "cycle.pt"))

with open(os.path.join(HERE, "answers.json"), "w") as f:
    json.dump(answers, f, indent=1)
