"""R3 corpus: a tiny actor-critic (A2C-style, PPO's logged names) on a toy chain task, CPU, seconds.

art_rl_raw_scale: rewards at raw scale (x100), no reward scaling, no advantage whitening.
art_rl_healthy:   the same run with rewards divided by a running std and whitened advantages.
Writes TensorBoard events under tests/bugs/art/<run>/ and tests/bugs/art/answers.json.
Usage: /work/venv-field/bin/python scripts/bugs/art_rl_scale.py
"""
import json, os, sys
import torch
from torch.utils.tensorboard import SummaryWriter

torch.set_num_threads(1)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "bugs", "art")


def chain_episode(policy, value, n=8, horizon=12, scale=1.0, gen=None):
    """Walk a chain of n states; reaching the right end pays `scale`, every step costs 0.01*scale."""
    s, obs, acts, rews = 0, [], [], []
    for _ in range(horizon):
        x = torch.nn.functional.one_hot(torch.tensor(s), n).float()
        logits = policy(x)
        a = torch.distributions.Categorical(logits=logits).sample()
        obs.append(x); acts.append(a)
        s = min(n - 1, s + 1) if a.item() == 1 else max(0, s - 1)
        r = scale if s == n - 1 else -0.01 * scale
        rews.append(r)
        if s == n - 1:
            break
    return torch.stack(obs), torch.stack(acts), torch.tensor(rews)


def train(name, raw, steps=150, seed=0):
    torch.manual_seed(seed)
    out = os.path.join(ROOT, name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    policy = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    value = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=3e-3)
    w = SummaryWriter(out)
    run_sq, run_n = 1.0, 1
    for step in range(1, steps + 1):
        obs, acts, rews = chain_episode(policy, value, scale=100.0)
        if not raw:  # reward scaling by a running std of the rewards
            run_sq += float((rews ** 2).sum()); run_n += len(rews)
            rews = rews / (run_sq / run_n) ** 0.5
        ret = torch.zeros_like(rews)
        g = 0.0
        for t in reversed(range(len(rews))):
            g = rews[t] + 0.99 * g
            ret[t] = g
        v = value(obs).squeeze(-1)
        adv = (ret - v).detach()
        if not raw and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        logp = torch.log_softmax(policy(obs), -1).gather(1, acts[:, None]).squeeze(1)
        pl = -(logp * adv).mean()
        vl = 0.5 * ((v - ret) ** 2).mean()
        opt.zero_grad(); (pl + 0.5 * vl).backward(); opt.step()
        w.add_scalar("ppo/loss/value", vl.item(), step)
        w.add_scalar("ppo/loss/policy", pl.item(), step)
        w.add_scalar("ppo/returns/mean", ret.mean().item(), step)
        w.add_scalar("env/reward_mean", rews.sum().item(), step)
    w.close()


RUNS = {
    "art_rl_raw_scale": dict(raw=True, accept=["R3"], bug="rewards x100, no reward scaling, no advantage whitening"),
    "art_rl_healthy": dict(raw=False, accept=[], bug=None),
}

if __name__ == "__main__":
    names = sys.argv[1:] or list(RUNS)
    ans_path = os.path.join(ROOT, "answers.json")
    ans = json.load(open(ans_path)) if os.path.exists(ans_path) else {}
    for n in names:
        r = RUNS[n]
        train(n, r["raw"])
        ans[n] = {"accept": r["accept"], "facts": {}, "bug": r["bug"],
                  "made_by": {"torch": torch.__version__}}
    json.dump(ans, open(ans_path, "w"), indent=2, sort_keys=True)
