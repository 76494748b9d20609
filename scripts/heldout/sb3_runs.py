"""Healthy RL runs made with stable-baselines3 on CartPole-v1, logged by
SB3's own logger (progress.csv and/or TensorBoard)."""
import csv
import os
import shutil

import numpy as np
import torch

torch.set_num_threads(1)
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from common import entry, versions

ENV = "CartPole-v1"


def made_by():
    import gymnasium
    return versions("stable_baselines3", "gymnasium")


def progress_rewards(path):
    with open(path) as f:
        return [float(r["rollout/ep_rew_mean"]) for r in csv.DictReader(f) if r.get("rollout/ep_rew_mean")]


def tb_rewards(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    vals = []
    for root, _, files in os.walk(logdir):
        for f in files:
            if f.startswith("events.out"):
                ea = EventAccumulator(os.path.join(root, f)); ea.Reload()
                if "rollout/ep_rew_mean" in ea.Tags()["scalars"]:
                    vals += [e.value for e in ea.Scalars("rollout/ep_rew_mean")]
    return vals


def improved(name, rews):
    assert len(rews) >= 3, f"{name}: too few rows"
    a, b = np.mean(rews[:2]), np.mean(rews[-2:])
    assert b > 1.5 * a, f"{name}: reward did not improve {a:.1f} -> {b:.1f}"


def run_ppo_csv(out):
    env = make_vec_env(ENV, n_envs=4, seed=0)
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=6, learning_rate=1e-3, gae_lambda=0.95,
                ent_coef=0.0, policy_kwargs=dict(net_arch=[32, 32]), seed=0, verbose=0)
    model.set_logger(configure(out, ["csv"]))
    model.learn(total_timesteps=12_000)
    model.save(os.path.join(out, "ppo_cartpole"))
    improved(out, progress_rewards(os.path.join(out, "progress.csv")))
    return entry(made_by(), "rl", "scratch", "sb3", log_interval=None, optimizer="adam", schedule="constant",
                 accum_steps=1)


def run_ppo_tb_checkpoints(out):
    env = make_vec_env(ENV, n_envs=2, seed=1)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=128, n_epochs=8, learning_rate=lambda f: 1e-3 * f,
                clip_range=0.2, policy_kwargs=dict(net_arch=dict(pi=[32], vf=[32])), seed=1,
                tensorboard_log=out, verbose=0)
    ck = CheckpointCallback(save_freq=2560, save_path=os.path.join(out, "checkpoints"), name_prefix="rl_model")
    model.learn(total_timesteps=10_240, callback=ck, tb_log_name="PPO")
    model.save(os.path.join(out, "final_model"))
    improved(out, tb_rewards(out))
    # keep at most 2 periodic checkpoints
    cks = sorted(os.listdir(os.path.join(out, "checkpoints")), key=lambda s: int(s.split("_")[2]))
    for f in cks[:-2]:
        os.remove(os.path.join(out, "checkpoints", f))
    return entry(made_by(), "rl", "scratch", "sb3", log_interval=None, optimizer="adam", schedule="linear",
                 accum_steps=1)


def run_a2c_csv_tb(out):
    env = make_vec_env(ENV, n_envs=8, seed=2)
    model = A2C("MlpPolicy", env, n_steps=8, learning_rate=3e-3, ent_coef=0.0, gamma=0.99,
                policy_kwargs=dict(net_arch=[32, 32]), seed=2, verbose=0)
    model.set_logger(configure(out, ["csv", "tensorboard", "log"]))
    model.learn(total_timesteps=16_000, log_interval=10)
    model.save(os.path.join(out, "a2c_cartpole"))
    improved(out, progress_rewards(os.path.join(out, "progress.csv")))
    return entry(made_by(), "rl", "scratch", "sb3", log_interval=None, optimizer="rmsprop", schedule="constant",
                 accum_steps=1)


def run_a2c_tb_eval(out):
    env = make_vec_env(ENV, n_envs=8, seed=3)
    eval_env = make_vec_env(ENV, n_envs=1, seed=99)
    model = A2C("MlpPolicy", env, n_steps=5, learning_rate=7e-4, use_rms_prop=False, normalize_advantage=True,
                policy_kwargs=dict(net_arch=[32, 32]), seed=3, tensorboard_log=out, verbose=0)
    ev = EvalCallback(eval_env, n_eval_episodes=5, eval_freq=500, best_model_save_path=out,
                      log_path=os.path.join(out, "eval"), deterministic=True, verbose=0)
    model.learn(total_timesteps=16_000, callback=ev, tb_log_name="a2c_cartpole", log_interval=20)
    improved(out, tb_rewards(out))
    return entry(made_by(), "rl", "scratch", "sb3", log_interval=None, optimizer="adam", schedule="constant",
                 accum_steps=1)


RUNS = [
    ("sb3_ppo_cartpole_progress_csv", run_ppo_csv),
    ("sb3_ppo_cartpole_tensorboard_checkpoints", run_ppo_tb_checkpoints),
    ("sb3_a2c_cartpole_csv_and_tb", run_a2c_csv_tb),
    ("sb3_a2c_cartpole_tb_eval_callback", run_a2c_tb_eval),
]


def main(out_dir, only=None):
    answers = {}
    for name, fn in RUNS:
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        answers[name] = fn(d)
        print("done", name, flush=True)
    return answers
