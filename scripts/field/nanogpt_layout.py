"""nanoGPT-style runs. nanoGPT is a repository, not a package, so this script trains a tiny
GPT written here with the same module names and writes what its train.py writes: one
`ckpt.pt` (dict with model, optimizer, model_args, iter_num, best_val_loss, config) saved at
each eval, and stdout lines `step N: train loss X, val loss Y` / `iter N: loss X, time Tms,
mfu M%` captured by the user as train.log, nohup.out or slurm-<jobid>.out."""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import VOCAB, markov, record, run_dir, versions


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Attn(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        self.nh = c["n_head"]

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.c_attn(x).split(e, dim=2)
        q, k, v = (z.view(b, t, self.nh, e // self.nh).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, e))


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(c["n_embd"], c["bias"]), Attn(c)
        self.ln_2, self.mlp = LayerNorm(c["n_embd"], c["bias"]), Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c, init_std=0.02):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=LayerNorm(c["n_embd"], c["bias"]),
        ))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT does
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, init_std)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, init_std / math.sqrt(2 * c["n_layer"]))

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1])
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for blk in self.transformer.h:
            x = blk(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def train(name, log_name, lr=3e-3, init_std=0.02, split_decay=True, compile_prefix=True,
          max_iters=300):
    out = run_dir(name)
    cfg = dict(out_dir=str(out.name), eval_interval=100, log_interval=1, eval_iters=10,
               eval_only=False, always_save_checkpoint=True, init_from="scratch",
               wandb_log=False, wandb_project="owt", wandb_run_name="gpt2",
               dataset="markov_char", gradient_accumulation_steps=1, batch_size=16,
               block_size=32, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True,
               learning_rate=lr, max_iters=max_iters, weight_decay=0.1, beta1=0.9,
               beta2=0.99, grad_clip=1.0, decay_lr=True, warmup_iters=30,
               lr_decay_iters=max_iters, min_lr=lr / 10, backend="gloo", device="cpu",
               dtype="float32", compile=compile_prefix)
    lines = []

    def say(s):
        lines.append(s)

    torch.manual_seed(1337)
    data = markov(2048, cfg["block_size"] + 1, seed=1)
    val = markov(256, cfg["block_size"] + 1, seed=2)
    tokens = cfg["batch_size"] * cfg["block_size"]
    say(f"tokens per iteration will be: {tokens:,}")
    say(f"found vocab_size = {VOCAB} (inside data/markov_char/meta.pkl)")
    say("Initializing a new model from scratch")
    model_args = dict(n_layer=cfg["n_layer"], n_head=cfg["n_head"], n_embd=cfg["n_embd"],
                      block_size=cfg["block_size"], bias=cfg["bias"], vocab_size=VOCAB,
                      dropout=cfg["dropout"])
    model = GPT(model_args, init_std)
    n = sum(p.numel() for p in model.parameters()) - model.transformer.wpe.weight.numel()
    say(f"number of parameters: {n / 1e6:.2f}M")
    params = dict(model.named_parameters())
    if split_decay:
        decay = [p for p in params.values() if p.dim() >= 2]
        nodecay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": cfg["weight_decay"]},
                  {"params": nodecay, "weight_decay": 0.0}]
        say(f"num decayed parameter tensors: {len(decay)}, with {sum(p.numel() for p in decay):,} parameters")
        say(f"num non-decayed parameter tensors: {len(nodecay)}, with {sum(p.numel() for p in nodecay):,} parameters")
    else:
        groups = [{"params": list(params.values()), "weight_decay": cfg["weight_decay"]}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(cfg["beta1"], cfg["beta2"]))
    say("using fused AdamW: False")
    if compile_prefix:
        say("compiling the model... (takes a ~minute)")

    def get_lr(it):
        w, d = cfg["warmup_iters"], cfg["lr_decay_iters"]
        if it < w:
            return lr * (it + 1) / (w + 1)
        if it > d:
            return cfg["min_lr"]
        r = (it - w) / (d - w)
        return cfg["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - cfg["min_lr"])

    def batch(src, g):
        ix = torch.randint(0, src.shape[0], (cfg["batch_size"],), generator=g)
        rows = src[ix]
        return rows[:, :-1], rows[:, 1:]

    gtrain, geval = torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)
    best = 1e9
    it, t0, mfu = 0, time.time(), -1.0
    while True:
        for g in opt.param_groups:
            g["lr"] = get_lr(it)
        if it % cfg["eval_interval"] == 0:
            model.eval()
            with torch.no_grad():
                ls = {k: torch.stack([model(*batch(s, geval)) for _ in range(cfg["eval_iters"])]).mean()
                      for k, s in (("train", data), ("val", val))}
            model.train()
            say(f"step {it}: train loss {ls['train']:.4f}, val loss {ls['val']:.4f}")
            if ls["val"] < best or cfg["always_save_checkpoint"]:
                best = min(best, ls["val"].item())
                if it > 0:
                    sd = model.state_dict()
                    if compile_prefix:  # torch.compile wraps the module: keys gain _orig_mod.
                        sd = {"_orig_mod." + k: v for k, v in sd.items()}
                    ckpt = {"model": sd, "optimizer": opt.state_dict(), "model_args": model_args,
                            "iter_num": it, "best_val_loss": torch.tensor(best), "config": cfg}
                    say(f"saving checkpoint to {cfg['out_dir']}")
                    torch.save(ckpt, out / "ckpt.pt")
        x, y = batch(data, gtrain)
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if it >= 5:
            est = 6 * n * tokens / dt / 312e12
            mfu = est if mfu == -1.0 else 0.9 * mfu + 0.1 * est
        say(f"iter {it}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu {mfu * 100:.2f}%")
        it += 1
        if it > max_iters:
            break
    (out / log_name).write_text("\n".join(lines) + "\n")
    return cfg


RUNS = {
    "nanogpt_healthy": (dict(log_name="train.log"), None, [], {}),
    "nanogpt_lr_100x": (dict(log_name="nohup.out", lr=3e-1),
                        "learning_rate 3e-1, 100x the healthy 3e-3",
                        ["S3.1", "S3.2", "S4.1", "S1.2", "O22"], {"lr_max": "0.003"}),
    "nanogpt_bad_init": (dict(log_name="slurm-4242.out", init_std=1.0),
                         "weights drawn with std 1.0 instead of 0.02", ["S1.1", "S5.1"], {}),
    "nanogpt_no_decay_split": (dict(log_name="train.log", split_decay=False, compile_prefix=False),
                               "one AdamW group: biases and LayerNorm weights decayed",
                               ["S6.1", "O6"], {}),
}

if __name__ == "__main__":
    made = versions("torch") + "; nanoGPT train.py layout (ckpt.pt + captured stdout)"
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts)
