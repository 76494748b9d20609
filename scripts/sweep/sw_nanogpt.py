"""nanoGPT-style runs: train.py's loop and what it leaves behind. One `ckpt.pt` in out_dir,
overwritten at each eval (dict: model, optimizer, model_args, iter_num, best_val_loss,
config); stdout `step N: train loss X, val loss Y` at evals and `iter N: loss X, time Tms,
mfu M%` every log_interval, captured as train.log / nohup.out / slurm-<job>.out.
init_from: 'scratch', 'resume' (a second job continuing iter_num from ckpt.pt), or a local
GPT-2 folder loaded the way GPT.from_pretrained loads 'gpt2' (Conv1D weights transposed)."""
import io
import math
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from sw_common import NS, V, VT, GPT, markov

DEFAULT = dict(out_dir="out", eval_interval=100, log_interval=10, eval_iters=10,
               eval_only=False, always_save_checkpoint=True, init_from="scratch",
               wandb_log=False, wandb_project="owt", wandb_run_name="gpt2",
               dataset="markov", gradient_accumulation_steps=1, batch_size=16,
               block_size=32, n_layer=2, n_head=2, n_embd=24, dropout=0.0, bias=True,
               learning_rate=3e-3, max_iters=300, weight_decay=0.1, beta1=0.9, beta2=0.99,
               grad_clip=1.0, decay_lr=True, warmup_iters=30, lr_decay_iters=300, min_lr=3e-4,
               backend="nccl", device="cpu", dtype="float32", compile=False)


def from_hf(path, block_size):
    """nanoGPT's GPT.from_pretrained, pointed at a local GPT-2 folder."""
    from transformers import GPT2LMHeadModel

    hf = GPT2LMHeadModel.from_pretrained(path)
    c = hf.config
    args = dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.n_positions,
                bias=True, vocab_size=c.vocab_size, dropout=0.0)
    model = GPT(args)
    sd, sd_hf = model.state_dict(), hf.state_dict()
    transposed = ["attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"]
    for k, v in sd_hf.items():
        if k.endswith(".attn.masked_bias") or k.endswith(".attn.bias") or k not in sd:
            continue
        with torch.no_grad():
            sd[k].copy_(v.t() if any(k.endswith(w) for w in transposed) else v)
    # crop_block_size, as train.py does when block_size < the checkpoint's
    model.transformer.wpe.weight = torch.nn.Parameter(model.transformer.wpe.weight[:block_size])
    args["block_size"] = block_size
    model.config = args
    return model, args


def train(out, cfg, log_path, log_mode="w", stop_after=None, seed=1337, chain=0, order=1):
    """One invocation of train.py. stop_after: the job is killed after that iteration."""
    out = Path(out)
    lines = []
    say = lines.append
    torch.manual_seed(seed)
    offset = NS if cfg["init_from"] not in ("scratch", "resume") else 0
    tokens = cfg["gradient_accumulation_steps"] * cfg["batch_size"] * cfg["block_size"]
    say(f"tokens per iteration will be: {tokens:,}")
    vocab = VT if offset else V
    say(f"found vocab_size = {vocab} (inside data/{cfg['dataset']}/meta.pkl)")
    iter_num, best_val = 0, 1e9
    if cfg["init_from"] == "scratch":
        say("Initializing a new model from scratch")
        model_args = dict(n_layer=cfg["n_layer"], n_head=cfg["n_head"], n_embd=cfg["n_embd"],
                          block_size=cfg["block_size"], bias=cfg["bias"], vocab_size=vocab,
                          dropout=cfg["dropout"])
        model = GPT(model_args)
    elif cfg["init_from"] == "resume":
        say(f"Resuming training from {cfg['out_dir']}")
        ck = torch.load(out / "ckpt.pt", map_location="cpu", weights_only=False)
        model_args = ck["model_args"]
        model = GPT(model_args)
        sd = {k.removeprefix("_orig_mod."): v for k, v in ck["model"].items()}
        model.load_state_dict(sd)
        iter_num, best_val = ck["iter_num"], float(ck["best_val_loss"])
    else:
        say(f"Initializing from OpenAI GPT-2 weights: {cfg['init_from']}")
        say(f"loading weights from pretrained gpt: {cfg['init_from']}")
        model, model_args = from_hf(cfg["init_from"], cfg["block_size"])
    n_params = sum(p.numel() for p in model.parameters()) - model.transformer.wpe.weight.numel()
    say(f"number of parameters: {n_params / 1e6:.2f}M")
    # configure_optimizers: 2-d tensors decayed, the rest not
    pd = {n: p for n, p in model.named_parameters() if p.requires_grad}
    decay = [p for p in pd.values() if p.dim() >= 2]
    nodecay = [p for p in pd.values() if p.dim() < 2]
    say(f"num decayed parameter tensors: {len(decay)}, with {sum(p.numel() for p in decay):,} parameters")
    say(f"num non-decayed parameter tensors: {len(nodecay)}, with {sum(p.numel() for p in nodecay):,} parameters")
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=cfg["learning_rate"], betas=(cfg["beta1"], cfg["beta2"]))
    say("using fused AdamW: False")
    if cfg["init_from"] == "resume":
        opt.load_state_dict(ck["optimizer"])
        ck = None
    if cfg["compile"]:
        say("compiling the model... (takes a ~minute)")
    # train.py: nullcontext on CPU; a bf16 run here is a GPU run's autocast, done on the CPU
    bf16 = cfg["dtype"] == "bfloat16"
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()

    def get_lr(it):
        if not cfg["decay_lr"]:
            return cfg["learning_rate"]
        w, d, lr, mn = cfg["warmup_iters"], cfg["lr_decay_iters"], cfg["learning_rate"], cfg["min_lr"]
        if it < w:
            return lr * (it + 1) / (w + 1)
        if it > d:
            return mn
        r = (it - w) / (d - w)
        return mn + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - mn)

    data = markov(4096, cfg["block_size"] + 1, seed=1, chain=chain, offset=offset, order=order)
    val = markov(256, cfg["block_size"] + 1, seed=2, chain=chain, offset=offset, order=order)
    gen = torch.Generator().manual_seed(seed + iter_num)

    def get_batch(src):
        ix = torch.randint(0, src.shape[0], (cfg["batch_size"],), generator=gen)
        rows = src[ix]
        return rows[:, :-1], rows[:, 1:]

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        res = {}
        for k, src in (("train", data), ("val", val)):
            ls = torch.zeros(cfg["eval_iters"])
            for i in range(cfg["eval_iters"]):
                with ctx:
                    ls[i] = model(*get_batch(src)).item()
            res[k] = ls.mean()
        model.train()
        return res

    def flops_per_iter(dt):
        L, H, Q, T = model_args["n_layer"], model_args["n_head"], model_args["n_embd"] // model_args["n_head"], model_args["block_size"]
        fpt = 6 * n_params + 12 * L * H * Q * T
        return fpt * T * cfg["batch_size"] * cfg["gradient_accumulation_steps"] / dt / 312e12

    accum = cfg["gradient_accumulation_steps"]
    X, Y = get_batch(data)
    t0, local_iter, running_mfu = time.time(), 0, -1.0
    logged = []
    while True:
        lr = get_lr(iter_num)
        for g in opt.param_groups:
            g["lr"] = lr
        if iter_num % cfg["eval_interval"] == 0:
            losses = estimate_loss()
            say(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
            if losses["val"] < best_val or cfg["always_save_checkpoint"]:
                best_val = min(best_val, float(losses["val"]))
                if iter_num > 0:
                    sd = model.state_dict()
                    if cfg["compile"]:
                        sd = {"_orig_mod." + k: v for k, v in sd.items()}
                    ck = {"model": sd, "optimizer": opt.state_dict(), "model_args": model_args,
                          "iter_num": iter_num, "best_val_loss": torch.tensor(best_val),
                          "config": {k: v for k, v in cfg.items() if not k.startswith("_")}}
                    say(f"saving checkpoint to {cfg['out_dir']}")
                    torch.save(ck, out / "ckpt.pt")
        for micro in range(accum):
            with ctx:
                loss = model(X, Y) / accum
            X, Y = get_batch(data)
            loss.backward()
        if cfg["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if iter_num % cfg["log_interval"] == 0:
            lossf = loss.item() * accum
            if local_iter >= 5:
                mfu = flops_per_iter(dt)
                running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
            say(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, mfu {running_mfu * 100:.2f}%")
            logged.append((iter_num, lossf))
        iter_num += 1
        local_iter += 1
        if iter_num > cfg["max_iters"] or (stop_after is not None and iter_num > stop_after):
            break
    with open(log_path, log_mode) as f:
        f.write("\n".join(lines) + "\n")
    return logged


def run(out, spec):
    """spec: cfg overrides + log_name, seed, resume=dict(stop=K', second_log='append'|name),
    chain/order. Returns the logged (iter, loss)."""
    spec = dict(spec)
    log_name = spec.pop("log_name", "train.log")
    seed = spec.pop("seed", 1337)
    resume = spec.pop("resume", None)
    order = spec.pop("order", 1)
    cfg = dict(DEFAULT)
    cfg.update(spec)
    cfg["out_dir"] = "out-" + Path(out).name
    if "lr_decay_iters" not in spec:
        cfg["lr_decay_iters"] = cfg["max_iters"]
    chain = 0 if cfg["init_from"] == "scratch" else 1
    if not resume:
        return train(out, cfg, Path(out) / log_name, seed=seed, chain=chain, order=order), None
    first = train(out, cfg, Path(out) / log_name, stop_after=resume["stop"], seed=seed,
                  chain=chain, order=order)
    ck = torch.load(Path(out) / "ckpt.pt", weights_only=False)
    at = ck["iter_num"]
    cfg2 = dict(cfg, init_from="resume")
    second = resume.get("second_log", "append")
    path = Path(out) / (log_name if second == "append" else second)
    logged = train(out, cfg2, path, "a" if second == "append" else "w", seed=seed + 1,
                   chain=chain, order=order)
    return [p for p in first if p[0] < at] + logged, at
