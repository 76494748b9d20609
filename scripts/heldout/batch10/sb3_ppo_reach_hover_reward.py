# stable-baselines3 PPO on a custom 2-D "reach the target" environment with a shaped reward.
import os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch, gymnasium as gym
from gymnasium import spaces
torch.set_num_threads(1)
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.callbacks import CheckpointCallback
out = sys.argv[1]; os.makedirs(out, exist_ok=True)

class Reach2D(gym.Env):
    """Move a point (5 discrete actions) to a target; episode ends when the target is reached."""
    MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32) * 0.05
    def __init__(self):
        self.observation_space = spaces.Box(-2, 2, (4,), np.float32); self.action_space = spaces.Discrete(5)
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32); self.t = 0
        return np.concatenate([self.pos, self.goal - self.pos]), {}
    def step(self, a):
        self.pos = np.clip(self.pos + self.MOVES[a], -1, 1); self.t += 1
        d = float(np.linalg.norm(self.goal - self.pos))
        success = d < 0.06
        reward = 1.0 if d < 0.3 else 0.0      # shaped: reward for being close to the target
        terminated = success; truncated = self.t >= 100
        return np.concatenate([self.pos, self.goal - self.pos]), reward, terminated, truncated, {"is_success": success, "final_dist": d}

env = DummyVecEnv([lambda i=i: Monitor(Reach2D(), os.path.join(out, f"monitor_{i}"), info_keywords=("is_success", "final_dist")) for i in range(4)])
model = PPO("MlpPolicy", env, n_steps=256, batch_size=128, learning_rate=1e-3, gamma=0.98, seed=0, verbose=1,
            tensorboard_log=os.path.join(out, "tb"))
model.learn(total_timesteps=60_000, callback=CheckpointCallback(save_freq=5000, save_path=os.path.join(out, "checkpoints"), name_prefix="ppo_reach"))
model.save(os.path.join(out, "ppo_reach_final"))
