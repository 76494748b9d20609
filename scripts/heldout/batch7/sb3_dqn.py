"""Stable-Baselines3 DQN on CartPole-v1 (rl-zoo style hyper-parameters), healthy.

Layout: SB3 logger (progress.csv + tensorboard events under tb/ + stdout -> train.log),
Monitor wrapper (monitor.csv), CheckpointCallback (checkpoints/dqn_cartpole_<n>_steps.zip),
EvalCallback (eval/evaluations.npz, eval/best_model.zip), final model dqn_cartpole.zip.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=30000)
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import gymnasium as gym  # noqa: E402
from stable_baselines3 import DQN  # noqa: E402
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback  # noqa: E402
from stable_baselines3.common.logger import configure  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

env = Monitor(gym.make("CartPole-v1"), os.path.join(out, "monitor.csv"))
eval_env = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))])
eval_env.seed(123)
model = DQN("MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100000, learning_starts=1000,
            gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
            exploration_fraction=0.16, exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[128, 128]),
            seed=0, device="cpu", verbose=1)
model.set_logger(configure(out, ["stdout", "csv", "tensorboard"]))
cbs = [CheckpointCallback(save_freq=args.steps // 2, save_path=os.path.join(out, "checkpoints"),
                          name_prefix="dqn_cartpole"),
       EvalCallback(eval_env, n_eval_episodes=5, eval_freq=5000, log_path=os.path.join(out, "eval"),
                    best_model_save_path=os.path.join(out, "eval"), deterministic=True)]
model.learn(total_timesteps=args.steps, callback=cbs, log_interval=10)
model.save(os.path.join(out, "dqn_cartpole"))

