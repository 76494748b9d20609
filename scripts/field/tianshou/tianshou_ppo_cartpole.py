"""PPO on CartPole-v1 with tianshou 2.0 (procedural API), TensorboardLogger + checkpoints.

Usage (as the user would run it):
  python tianshou_ppo_cartpole.py --logdir RUN_DIR [--lr 3e-4] [--reward-scale 1.0] 2>&1 | tee RUN_DIR/train.log
"""
import argparse
import json
import os
import pprint

import gymnasium as gym
import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils import TensorboardLogger
from tianshou.utils.net.common import ActorCritic, Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", type=str, default="CartPole-v1")
    parser.add_argument("--reward-threshold", type=float, default=475.0)
    parser.add_argument("--seed", type=int, default=1626)
    parser.add_argument("--buffer-size", type=int, default=20000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--epoch", type=int, default=12)
    parser.add_argument("--step-per-epoch", type=int, default=4000)
    parser.add_argument("--step-per-collect", type=int, default=1000)
    parser.add_argument("--repeat-per-collect", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    parser.add_argument("--training-num", type=int, default=8)
    parser.add_argument("--test-num", type=int, default=10)
    parser.add_argument("--logdir", type=str, default="log")
    parser.add_argument("--vf-coef", type=float, default=0.5)
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--eps-clip", type=float, default=0.2)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--rew-norm", type=int, default=0)
    parser.add_argument("--norm-adv", type=int, default=0)
    parser.add_argument("--reward-scale", type=float, default=1.0,
                        help="multiply env rewards by this factor (TransformReward wrapper)")
    return parser.parse_known_args()[0]


def make_env(task: str, reward_scale: float):
    env = gym.make(task)
    if reward_scale != 1.0:
        env = gym.wrappers.TransformReward(env, lambda r: reward_scale * r)
    return env


def main() -> None:
    args = get_args()
    torch.set_num_threads(1)
    env = make_env(args.task, args.reward_scale)
    state_shape = env.observation_space.shape
    action_shape = env.action_space.n
    train_envs = DummyVectorEnv(
        [lambda: make_env(args.task, args.reward_scale) for _ in range(args.training_num)])
    test_envs = DummyVectorEnv(
        [lambda: make_env(args.task, args.reward_scale) for _ in range(args.test_num)])
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_envs.seed(args.seed)
    test_envs.seed(args.seed)

    # shared trunk, as in tianshou's test_ppo examples
    net = Net(state_shape=state_shape, hidden_sizes=args.hidden_sizes)
    actor = DiscreteActor(preprocess_net=net, action_shape=action_shape)
    critic = DiscreteCritic(preprocess_net=net)
    actor_critic = ActorCritic(actor, critic)
    for m in actor_critic.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.orthogonal_(m.weight)
            torch.nn.init.zeros_(m.bias)
    optim = AdamOptimizerFactory(lr=args.lr)
    policy = DiscreteActorPolicy(actor=actor, action_space=env.action_space,
                                 deterministic_eval=True)
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=args.gamma,
        max_grad_norm=args.max_grad_norm,
        eps_clip=args.eps_clip,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        gae_lambda=args.gae_lambda,
        return_scaling=bool(args.rew_norm),
        advantage_normalization=bool(args.norm_adv),
    )
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(args.buffer_size, len(train_envs)))
    test_collector = Collector[CollectStats](algorithm, test_envs)

    log_path = args.logdir
    os.makedirs(log_path, exist_ok=True)
    with open(os.path.join(log_path, "config.json"), "w") as f:
        json.dump(vars(args), f, indent=2)
    writer = SummaryWriter(log_path)
    writer.add_text("args", str(args))
    logger = TensorboardLogger(writer, training_interval=1, update_interval=1, save_interval=1)

    def save_best_fn(alg: Algorithm) -> None:
        torch.save(alg.state_dict(), os.path.join(log_path, "policy.pth"))

    def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
        ckpt_path = os.path.join(log_path, "checkpoint.pth")
        torch.save({"model": algorithm.state_dict(), "epoch": epoch,
                    "env_step": env_step, "gradient_step": gradient_step}, ckpt_path)
        return ckpt_path

    def stop_fn(mean_rewards: float) -> bool:
        return False  # train for the full budget

    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.step_per_epoch,
            update_step_num_repetitions=args.repeat_per_collect,
            test_step_num_episodes=args.test_num,
            batch_size=args.batch_size,
            collection_step_num_env_steps=args.step_per_collect,
            stop_fn=stop_fn,
            save_best_fn=save_best_fn,
            save_checkpoint_fn=save_checkpoint_fn,
            logger=logger,
            test_in_training=False,
        ))
    pprint.pprint(result)


if __name__ == "__main__":
    main()
