"""A single-file PPO in CleanRL's style (written here, not copied): gymnasium SyncVectorEnv with
RecordEpisodeStatistics, an Agent with separate actor and critic MLPs, GAE, minibatch PPO
epochs with clipping, a linearly annealed LR, and a torch.utils.tensorboard SummaryWriter under
runs/<run_name>/ logging CleanRL's tag names (charts/*, losses/*). The run name follows
CleanRL's f"{env_id}__{exp_name}__{seed}__{int(time.time())}"; the model is saved with
torch.save(agent.state_dict(), f"runs/{run_name}/{exp_name}.cleanrl_model").

The layout in tests/field/<run>/ is what `python ppo.py` would leave in its working folder:
runs/<run_name>/{events.out.tfevents.*, <exp_name>.cleanrl_model}."""
import os
import random
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributions.categorical import Categorical  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from common import record, run_dir, versions  # noqa: E402


def layer(i, o, std=np.sqrt(2), bias=0.0):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, bias)
    return lin


class Agent(nn.Module):
    def __init__(self, obs_dim, n_act, hidden=32):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden),
                                    nn.Tanh(), layer(hidden, 1, std=1.0))
        self.actor = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden),
                                   nn.Tanh(), layer(hidden, n_act, std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def train(name, exp_name="ppo", lr=2.5e-4, adv_sign=1.0, total_timesteps=50_000, seed=1,
          num_envs=4, num_steps=128, num_minibatches=4, update_epochs=4, gamma=0.99,
          gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
          anneal_lr=True, env_id="CartPole-v1"):
    out = run_dir(name)
    os.chdir(out)  # CleanRL writes runs/ relative to where the script is started
    run_name = f"{env_id}__{exp_name}__{seed}__{int(time.time())}"
    writer = SummaryWriter(f"runs/{run_name}")
    hp = dict(exp_name=exp_name, env_id=env_id, learning_rate=lr, total_timesteps=total_timesteps,
              seed=seed, num_envs=num_envs, num_steps=num_steps, num_minibatches=num_minibatches,
              update_epochs=update_epochs, gamma=gamma, gae_lambda=gae_lambda, clip_coef=clip_coef,
              ent_coef=ent_coef, vf_coef=vf_coef, max_grad_norm=max_grad_norm, anneal_lr=anneal_lr,
              norm_adv=True, clip_vloss=True)
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" +
                    "\n".join(f"|{k}|{v}|" for k, v in hp.items()))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)

    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make(env_id)) for _ in range(num_envs)])
    agent = Agent(int(np.prod(envs.single_observation_space.shape)), envs.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)

    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    num_iterations = total_timesteps // batch_size
    obs = torch.zeros((num_steps, num_envs) + envs.single_observation_space.shape)
    actions = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    global_step = 0
    start = time.time()
    next_obs, _ = envs.reset(seed=seed)
    next_obs = torch.as_tensor(next_obs, dtype=torch.float32)
    next_done = torch.zeros(num_envs)
    for iteration in range(1, num_iterations + 1):
        if anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * lr
        for step in range(num_steps):
            global_step += num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            o, r, term, trunc, infos = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(r, dtype=torch.float32)
            next_obs = torch.as_tensor(o, dtype=torch.float32)
            next_done = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            if "episode" in infos:
                for i in np.nonzero(infos["_episode"])[0]:
                    ret, length = float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])
                    writer.add_scalar("charts/episodic_return", ret, global_step)
                    writer.add_scalar("charts/episodic_length", length, global_step)

        with torch.no_grad():  # GAE
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                nonterminal = 1.0 - (next_done if t == num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == num_steps - 1 else values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_adv, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            np.random.shuffle(b_inds)
            for s in range(0, batch_size, minibatch_size):
                mb = b_inds[s:s + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > clip_coef).float().mean().item())
                mb_adv = b_adv[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                mb_adv = adv_sign * mb_adv
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)).mean()
                newvalue = newvalue.view(-1)
                v_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -clip_coef, clip_coef)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", int(global_step / (time.time() - start)), global_step)

    torch.save(agent.state_dict(), f"runs/{run_name}/{exp_name}.cleanrl_model")
    envs.close()
    writer.close()


RUNS = {
    "cleanrl_ppo_healthy": (dict(), None, [], {}),
    "cleanrl_ppo_adv_sign_flipped": (
        dict(adv_sign=-1.0),
        "normalised advantages multiplied by -1 before the clipped surrogate: the policy is "
        "pushed away from the actions that paid, episodic_return falls from its first values "
        "(about 20) towards the CartPole floor (about 9) and stays there",
        ["R1", "F1"], {}),
    "cleanrl_ppo_lr_huge": (
        dict(lr=1.0),
        "learning_rate=1.0, 4000x CleanRL's 2.5e-4 default (Adam, eps 1e-5; 2.5e-2 still "
        "learns on this tiny CartPole agent): approx_kl 140 and clipfrac 0.94 at the first "
        "update, then entropy 0 (a deterministic policy, approx_kl 0 from there on) and "
        "episodic_return falls from about 19 to the CartPole floor of 9",
        ["R7", "R1"], {}),
}

if __name__ == "__main__":
    made = versions("torch", "gymnasium")
    here = os.getcwd()
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        os.chdir(here)
        record(name, made + " (CleanRL-style single-file PPO, scripts/field/cleanrl_ppo.py)",
               bug, accept, facts,
               profile={"framework": "cleanrl", "resumed_at": None, "init_checkpoint": False})
