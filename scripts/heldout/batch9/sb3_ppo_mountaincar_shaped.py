"""PPO on MountainCar-v0 with a velocity-bonus reward shaping wrapper (Stable-Baselines3).

The shaping is meant to help exploration on the sparse -1/step task. Monitor, EvalCallback and the
SB3 logger all see the shaped reward. Checkpoints are saved as .zip files.
"""
import os
import sys

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.set_num_threads(1)

VEL_BONUS = 100.0  # scale the tiny velocities (|v| <= 0.07) into a useful signal


class VelocityBonus(gym.Wrapper):
    """Reward the car for building up speed so that it learns to swing."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["env_reward"] = reward
        reward = reward + VEL_BONUS * abs(float(obs[1]))
        return obs, reward, terminated, truncated, info


def make_env():
    return VelocityBonus(gym.make("MountainCar-v0"))


os.makedirs(os.path.join(out, "monitor"), exist_ok=True)
venv = make_vec_env(make_env, n_envs=4, seed=0, monitor_dir=os.path.join(out, "monitor"))
eval_env = Monitor(make_env())

model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, n_epochs=8, learning_rate=1e-3, gamma=0.99,
            gae_lambda=0.95, ent_coef=0.01, clip_range=0.2, policy_kwargs=dict(net_arch=[64, 64]), seed=0)
model.set_logger(configure(os.path.join(out, "sb3_log"), ["csv", "tensorboard"]))
model.learn(total_timesteps=120_000, callback=[
    EvalCallback(eval_env, n_eval_episodes=3, eval_freq=5000, log_path=os.path.join(out, "eval"),
                 best_model_save_path=os.path.join(out, "eval"), deterministic=True),
    CheckpointCallback(save_freq=10_000, save_path=os.path.join(out, "checkpoints"), name_prefix="ppo_mc"),
])
model.save(os.path.join(out, "ppo_mountaincar_final"))
