"""Hand-written DQN on CartPole-v1 (plain PyTorch + gymnasium).

One JSONL row per episode (logs/episodes.jsonl), a per-1000-step CSV of TD loss / Q statistics
(logs/train_stats.csv), and .pt checkpoints every 5000 steps holding the online net, the target net,
the optimizer state and the step counter.
"""
import csv
import json
import os
import random
import sys
from collections import deque

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

out = sys.argv[1]
for d in ("logs", "checkpoints"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
torch.set_num_threads(1)
SEED = 0
random.seed(SEED); np.random.seed(SEED); torch.manual_seed(SEED)

cfg = dict(total_steps=25_000, buffer_size=20_000, batch_size=64, gamma=0.99, lr=5e-4, learning_starts=1000,
           train_every=1, target_update_every=500, eps_start=1.0, eps_end=0.05, eps_decay_steps=10_000,
           hidden=128, ckpt_every=5000)
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)


def qnet():
    return nn.Sequential(nn.Linear(4, cfg["hidden"]), nn.ReLU(), nn.Linear(cfg["hidden"], cfg["hidden"]), nn.ReLU(),
                         nn.Linear(cfg["hidden"], 2))


online, target = qnet(), qnet()
target.load_state_dict(online.state_dict())
opt = torch.optim.Adam(online.parameters(), lr=cfg["lr"])
buf = deque(maxlen=cfg["buffer_size"])
env = gym.make("CartPole-v1")
obs, _ = env.reset(seed=SEED)

ep_log = open(os.path.join(out, "logs", "episodes.jsonl"), "w")
st_f = open(os.path.join(out, "logs", "train_stats.csv"), "w", newline="")
st = csv.writer(st_f)
st.writerow(["step", "td_loss", "q_mean", "q_max", "epsilon", "n_episodes"])
ep, ep_ret, ep_len, losses, qs = 0, 0.0, 0, [], []
for step in range(1, cfg["total_steps"] + 1):
    eps = max(cfg["eps_end"], cfg["eps_start"] - (cfg["eps_start"] - cfg["eps_end"]) * step / cfg["eps_decay_steps"])
    if random.random() < eps:
        a = env.action_space.sample()
    else:
        with torch.no_grad():
            a = int(online(torch.as_tensor(obs, dtype=torch.float32)).argmax())
    nobs, r, term, trunc, _ = env.step(a)
    buf.append((obs, a, r, nobs, float(term)))
    obs = nobs
    ep_ret += r
    ep_len += 1
    if term or trunc:
        ep += 1
        ep_log.write(json.dumps({"episode": ep, "step": step, "return": ep_ret, "length": ep_len,
                                 "epsilon": round(eps, 4)}) + "\n")
        obs, _ = env.reset()
        ep_ret, ep_len = 0.0, 0

    if step > cfg["learning_starts"] and step % cfg["train_every"] == 0:
        batch = random.sample(buf, cfg["batch_size"])
        s, a_, r_, s2, d_ = (torch.as_tensor(np.array(x), dtype=torch.float32) for x in zip(*batch))
        q = online(s).gather(1, a_.long()[:, None]).squeeze(1)
        with torch.no_grad():
            y = r_ + cfg["gamma"] * (1 - d_) * target(s2).max(1).values
        loss = F.smooth_l1_loss(q, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(online.parameters(), 10.0)
        opt.step()
        losses.append(loss.item())
        qs.append(q.detach())

    if step % cfg["target_update_every"] == 0:
        # hard update of the target network
        online.load_state_dict(target.state_dict())

    if step % 1000 == 0:
        qcat = torch.cat(qs) if qs else torch.zeros(1)
        st.writerow([step, float(np.mean(losses)) if losses else "", float(qcat.mean()), float(qcat.max()),
                     round(eps, 4), ep])
        st_f.flush()
        ep_log.flush()
        losses, qs = [], []
    if step % cfg["ckpt_every"] == 0:
        torch.save({"step": step, "episode": ep, "online": online.state_dict(), "target": target.state_dict(),
                    "optimizer": opt.state_dict(), "config": cfg},
                   os.path.join(out, "checkpoints", f"dqn_step{step:06d}.pt"))
ep_log.close()
st_f.close()
