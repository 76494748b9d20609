"""Stable-Baselines3 SAC on Pendulum-v1. Logger: progress.csv + TensorBoard via sb3 configure();
CheckpointCallback zips + EvalCallback (evaluations.npz, best_model.zip)."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import gymnasium as gym
from stable_baselines3 import SAC
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback, CallbackList

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(0)
env = Monitor(gym.make("Pendulum-v1"), os.path.join(out, "monitor"))
eval_env = Monitor(gym.make("Pendulum-v1"))
model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=20000, batch_size=128, learning_starts=500,
            policy_kwargs=dict(net_arch=[64, 64]), seed=0, verbose=0, device="cpu")
model.set_logger(configure(out, ["csv", "tensorboard"]))
cbs = CallbackList([CheckpointCallback(save_freq=2000, save_path=os.path.join(out, "checkpoints"), name_prefix="sac_pendulum"),
                    EvalCallback(eval_env, eval_freq=1000, n_eval_episodes=3, best_model_save_path=os.path.join(out, "eval"),
                                 log_path=os.path.join(out, "eval"), deterministic=True)])
model.learn(total_timesteps=int(os.environ.get("STEPS", 6000)), callback=cbs, log_interval=4)
model.save(os.path.join(out, "final_model"))
import pandas as pd
df = pd.read_csv(os.path.join(out, "progress.csv"))
print(df[[c for c in ["time/total_timesteps", "rollout/ep_rew_mean", "eval/mean_reward", "train/critic_loss", "train/ent_coef"] if c in df]].to_string())
