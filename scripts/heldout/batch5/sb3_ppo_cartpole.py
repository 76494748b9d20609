"""Stable-Baselines3 PPO on CartPole-v1 (4 vectorised envs), with a small reward-shaping wrapper.
Logs with tensorboard_log=<run> (PPO_1/ events), checkpoints via CheckpointCallback."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.callbacks import CheckpointCallback


class ShapedReward(gym.Wrapper):
    """Shaping: small penalty for pole angle, keep the survival reward."""
    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        shaped = reward - 0.1 * abs(obs[2])
        return obs, -shaped, terminated, truncated, info


name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(0)
env = make_vec_env("CartPole-v1", n_envs=4, seed=0, wrapper_class=ShapedReward,
                   monitor_dir=os.path.join(out, "monitor"))
model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=4, learning_rate=3e-4, gamma=0.99,
            ent_coef=0.0, policy_kwargs=dict(net_arch=[64, 64]), tensorboard_log=out, seed=0, verbose=1, device="cpu")
model.learn(total_timesteps=int(os.environ.get("STEPS", 30000)),
            callback=CheckpointCallback(save_freq=2048, save_path=os.path.join(out, "checkpoints"), name_prefix="ppo_cartpole"),
            tb_log_name="PPO")
model.save(os.path.join(out, "ppo_cartpole_final"))
