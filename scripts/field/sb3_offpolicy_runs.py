"""Stable-Baselines3 off-policy runs, written the way the SB3 docs show: DQN on CartPole-v1 and
SAC on Pendulum-v1 with tensorboard_log, a Monitor folder and CheckpointCallback; one DQN run is
stopped at 10,000 timesteps and resumed from its checkpoint with
`learn(..., reset_num_timesteps=False)` (the docs' way to continue a run), so its second
session's archives say `_num_timesteps_at_start=10000`. Off-policy algorithms log nothing
before `learning_starts`: the first logged point comes long after the logging interval on a run
that was not resumed. Networks are 2x32; each run takes well under a minute on one core."""
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

from stable_baselines3 import DQN, SAC  # noqa: E402
from stable_baselines3.common.callbacks import CheckpointCallback  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

from common import record, run_dir, versions  # noqa: E402


def dqn(out, env, total, reset=True, model=None):
    if model is None:
        model = DQN("MlpPolicy", env, learning_rate=1e-3, buffer_size=10_000, learning_starts=1000,
                    batch_size=64, target_update_interval=500, train_freq=4,
                    exploration_fraction=0.3, policy_kwargs=dict(net_arch=[32, 32]),
                    tensorboard_log=str(out / "tb"), seed=0, verbose=0, device="cpu")
    ckpt = CheckpointCallback(5000, str(out / "checkpoints"), name_prefix="dqn")
    model.learn(total, callback=ckpt, tb_log_name="DQN", reset_num_timesteps=reset)
    return model


def train(name):
    out = run_dir(name)
    if name == "sb3_dqn_healthy":
        env = make_vec_env("CartPole-v1", n_envs=1, seed=0, monitor_dir=str(out / "monitor"))
        dqn(out, env, 20_000).save(out / "dqn_cartpole")
    elif name == "sb3_dqn_resumed_healthy":
        env = make_vec_env("CartPole-v1", n_envs=1, seed=0, monitor_dir=str(out / "monitor"))
        dqn(out, env, 10_000)
        # A new process would do the same: load the checkpoint, continue counting timesteps.
        model = DQN.load(out / "checkpoints" / "dqn_10000_steps.zip", env=env, device="cpu",
                         tensorboard_log=str(out / "tb"))
        dqn(out, env, 10_000, reset=False, model=model).save(out / "dqn_cartpole")
    else:
        env = make_vec_env("Pendulum-v1", n_envs=1, seed=0, monitor_dir=str(out / "monitor"))
        model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=20_000, learning_starts=500,
                    batch_size=128, policy_kwargs=dict(net_arch=[32, 32]),
                    tensorboard_log=str(out / "tb"), seed=0, verbose=0, device="cpu")
        model.learn(8000, callback=CheckpointCallback(4000, str(out / "checkpoints"),
                                                      name_prefix="sac"), tb_log_name="SAC")
        model.save(out / "sac_pendulum")
    env.close()


RUNS = {
    "sb3_dqn_healthy": None,
    "sb3_dqn_resumed_healthy": 10_000,
    "sb3_sac_healthy": None,
}

if __name__ == "__main__":
    made = versions("torch", "stable_baselines3", "gymnasium")
    for name, resumed in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name)
        record(name, made, None, [], {},
               profile={"framework": "sb3", "resumed_at": resumed, "init_checkpoint": False})
