# HEALTHY: stable-baselines3 PPO on CartPole-v1. Episode return is flat (~20) for the first ~80 episodes, then climbs to the 500 cap.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch, gymnasium as gym
torch.set_num_threads(1)
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.callbacks import CheckpointCallback
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
env = DummyVecEnv([lambda i=i: Monitor(gym.make("CartPole-v1"), os.path.join(out, f"monitor_{i}")) for i in range(4)])
model = PPO("MlpPolicy", env, n_steps=256, batch_size=128, learning_rate=1e-3, seed=0, verbose=1,
            tensorboard_log=os.path.join(out, "tb"))
model.learn(total_timesteps=60_000, callback=CheckpointCallback(save_freq=5000, save_path=os.path.join(out, "checkpoints"), name_prefix="ppo_cartpole"))
model.save(os.path.join(out, "ppo_cartpole_final"))
