# Healthy: hand-written DQN on CartPole-v1 with a target_net hard-copied every 500 steps.
# TensorBoard + progress.csv; checkpoints every 500 steps over the last 1500 steps.
import os, sys, csv, random, torch, numpy as np, gymnasium as gym
torch.set_num_threads(1)
from torch.utils.tensorboard import SummaryWriter
out = sys.argv[1]; os.makedirs(os.path.join(out, "checkpoints"), exist_ok=True)
random.seed(0); np.random.seed(0); torch.manual_seed(0)
env = gym.make("CartPole-v1"); env.action_space.seed(0)
def net(): return torch.nn.Sequential(torch.nn.Linear(4, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                      torch.nn.ReLU(), torch.nn.Linear(128, 2))
policy_net, target_net = net(), net()
target_net.load_state_dict(policy_net.state_dict())
opt = torch.optim.Adam(policy_net.parameters(), lr=5e-4)
cfg = dict(total_steps=10000, gamma=0.99, batch_size=64, buffer_size=20000, target_update=500,
           eps_start=1.0, eps_end=0.05, eps_decay_steps=6000, learning_starts=500, lr=5e-4, train_freq=1)
S = np.zeros((cfg["buffer_size"], 4), np.float32); S2 = S.copy()
A = np.zeros(cfg["buffer_size"], np.int64); R = np.zeros(cfg["buffer_size"], np.float32); D = R.copy()
n = 0
tb = SummaryWriter(os.path.join(out, "tb"))
fcsv = open(os.path.join(out, "progress.csv"), "w", newline=""); w = csv.writer(fcsv)
w.writerow(["step", "episode", "episode_return", "episode_length", "epsilon", "loss"])
obs, _ = env.reset(seed=0); ep_ret, ep_len, ep = 0.0, 0, 0; loss_v = float("nan")
for step in range(1, cfg["total_steps"] + 1):
    eps = max(cfg["eps_end"], cfg["eps_start"] - (cfg["eps_start"] - cfg["eps_end"]) * step / cfg["eps_decay_steps"])
    if random.random() < eps: a = env.action_space.sample()
    else:
        with torch.no_grad(): a = int(policy_net(torch.tensor(obs)).argmax())
    obs2, r, term, trunc, _ = env.step(a)
    i = n % cfg["buffer_size"]; S[i], A[i], R[i], S2[i], D[i] = obs, a, r, obs2, float(term); n += 1
    obs = obs2; ep_ret += r; ep_len += 1
    if term or trunc:
        ep += 1; w.writerow([step, ep, ep_ret, ep_len, round(eps, 4), loss_v])
        tb.add_scalar("rollout/ep_rew", ep_ret, step); tb.add_scalar("rollout/ep_len", ep_len, step)
        tb.add_scalar("rollout/epsilon", eps, step)
        obs, _ = env.reset(); ep_ret, ep_len = 0.0, 0
    if step > cfg["learning_starts"]:
        idx = np.random.randint(0, min(n, cfg["buffer_size"]), cfg["batch_size"])
        s, a_, r_, s2, d = map(torch.tensor, (S[idx], A[idx], R[idx], S2[idx], D[idx]))
        q = policy_net(s).gather(1, a_[:, None]).squeeze(1)
        with torch.no_grad(): tgt = r_ + cfg["gamma"] * (1 - d) * target_net(s2).max(1).values
        loss = torch.nn.functional.smooth_l1_loss(q, tgt)
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(policy_net.parameters(), 10.0); opt.step()
        loss_v = round(loss.item(), 5)
        if step % 100 == 0:
            tb.add_scalar("train/loss", loss_v, step); tb.add_scalar("train/q_mean", q.mean().item(), step)
    if step % cfg["target_update"] == 0:
        target_net.load_state_dict(policy_net.state_dict())
    if step >= cfg["total_steps"] - 1000 and step % 500 == 0:
        torch.save({"step": step, "policy_net": policy_net.state_dict(), "target_net": target_net.state_dict(),
                    "optimizer": opt.state_dict(), "config": cfg}, os.path.join(out, "checkpoints", f"dqn_step{step}.pt"))
fcsv.close(); tb.close()
