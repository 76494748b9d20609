"""SAC on Pendulum-v1 with Stable-Baselines3 (healthy).

Per-episode Monitor log, CSV + TensorBoard logger, EvalCallback (evaluations.npz + best_model.zip),
periodic CheckpointCallback .zip files (policy + critic + critic_target inside).
"""
import os
import sys

import gymnasium as gym
import torch
from stable_baselines3 import SAC
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.set_num_threads(1)

env = Monitor(gym.make("Pendulum-v1"), os.path.join(out, "monitor"))
eval_env = Monitor(gym.make("Pendulum-v1"))

model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=50_000, learning_starts=1000, batch_size=128,
            tau=0.01, gamma=0.98, train_freq=1, gradient_steps=1, policy_kwargs=dict(net_arch=[64, 64]),
            seed=3, verbose=0)
model.set_logger(configure(os.path.join(out, "logs"), ["stdout", "csv", "tensorboard"]))
callbacks = [
    EvalCallback(eval_env, n_eval_episodes=4, eval_freq=1500, log_path=os.path.join(out, "eval"),
                 best_model_save_path=os.path.join(out, "eval"), deterministic=True),
    CheckpointCallback(save_freq=4000, save_path=os.path.join(out, "checkpoints"), name_prefix="sac_pendulum"),
]
model.learn(total_timesteps=12_000, callback=callbacks, log_interval=4)
model.save(os.path.join(out, "sac_pendulum_final"))
