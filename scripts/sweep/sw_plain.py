"""Plain PyTorch training loops, written the way people write them: a model (the nanoGPT-style
GPT here, or a transformers model / PEFT adapter), an optimizer, a LambdaLR schedule, a
for-loop, and metrics appended to JSONL, CSV or printed to stdout (captured as train.log).
Resumed runs are two jobs: the second loads a checkpoint and continues the global step."""
import csv
import io
import json
import math
import shutil
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file, save_model

from sw_common import (NS, GPT, GPTClassifier, classes, gpt_cfg, lr_lambda, make_optimizer,
                       markov)

GPT_BASE = "_bases/tiny-gpt-markov.pt"
HF_BASE = "_bases/tiny-gpt2-markov"

DEFAULTS = dict(task="lm", model="gpt", init="scratch", steps=300, log=10, fmt="jsonl",
                style="after", agg="mean", sched="cosine", warmup=None, lr=None, optim="adamw",
                precision="fp32", accum=1, bs=16, seq=32, n_embd=24, n_layer=2, order=1,
                save_every=None, keep_last=2, ckpt="pt", init0=False, eval_every=None,
                log_name=None, seed=0, clip=1.0, n_cls=3, wd=0.1,
                # resume: dict(at=K, stop=K', second_log="new"|"append"|"only", keep_first=True)
                resume=None, prefix=None, min_ratio=0.0, time_col=True, line="colon",
                save_dtype="fp32")


def fmt_line(r, style, total):
    """One stdout line in one of the shapes training scripts print."""
    kv = [(k, v) for k, v in r.items() if k != "step" and v is not None]

    def num(k, v):
        if k == "lr":
            return f"{v:.3e}" if style != "slash" else f"{v:.2e}"
        if k == "dt_ms":
            return f"{v:.1f}ms"
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    if style == "colon":   # step 100: loss 2.3100 lr 3.000e-04 grad_norm 0.8000 12.1ms
        return f"step {r['step']}: " + " ".join(
            num(k, v) if k == "dt_ms" else f"{k} {num(k, v)}" for k, v in kv)
    if style == "pipe":    # step 100 | loss 2.3100 | lr 3.000e-04 | grad_norm 0.8000 | 12.1ms
        return " | ".join([f"step {r['step']}"] + [
            num(k, v) if k == "dt_ms" else f"{k} {num(k, v)}" for k, v in kv])
    if style == "kv":      # step=100 loss=2.3100 lr=3.000e-04 grad_norm=0.8000 dt_ms=12.1
        return " ".join([f"step={r['step']}"] + [
            f"{k}={v:.1f}" if k == "dt_ms" else f"{k}={num(k, v)}" for k, v in kv])
    # slash: Step 100/2000 - loss: 2.3100 - lr: 3.00e-04 - grad_norm: 0.8000
    return " - ".join([f"Step {r['step']}/{total}"] + [
        f"{k}: {num(k, v)}" for k, v in kv if k != "dt_ms"])


class Logger:
    """One metric sink in the run's format: JSONL rows, a CSV table, or stdout lines."""

    def __init__(self, path, fmt, mode="w", fields=("step", "loss", "lr", "grad_norm"),
                 line="colon", total=0):
        self.path, self.fmt, self.fields = Path(path), fmt, list(fields)
        self.line, self.total = line, total
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = mode == "w" or not self.path.exists()
        self.f = open(self.path, mode)
        if fmt == "csv":
            self.w = csv.DictWriter(self.f, fieldnames=self.fields, extrasaction="ignore")
            if new:
                self.w.writeheader()

    def text(self, line):
        if self.fmt == "stdout":
            self.f.write(line + "\n")

    def row(self, r):
        if self.fmt == "jsonl":
            self.f.write(json.dumps(r) + "\n")
        elif self.fmt == "csv":
            self.w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in self.fields})
        else:
            self.f.write(fmt_line(r, self.line, self.total) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


def build(s):
    """Model, a batch function and the loss call for the spec."""
    torch.manual_seed(s["seed"])
    off = 0
    if s["model"] == "gpt":
        cfg = gpt_cfg(s["n_embd"], s["n_layer"], 2, s["seq"])
        if s["task"] == "cls":
            model = GPTClassifier(cfg, s["n_cls"])
            if s["init"] == "pretrained":
                base = torch.load(GPT_BASE, weights_only=True)
                model.gpt.load_state_dict(base["model"])
        else:
            model = GPT(cfg)
            if s["init"] == "pretrained":
                base = torch.load(GPT_BASE, weights_only=True)
                model.load_state_dict(base["model"])
    else:  # a transformers model in a hand-written loop
        from transformers import AutoModelForCausalLM
        from sw_hf import lora_wrap, scratch_lm
        off = NS
        if s["init"] == "scratch":
            model = scratch_lm("gpt2", s["n_embd"], s["n_layer"])
        else:
            model = AutoModelForCausalLM.from_pretrained(HF_BASE)
            if s["init"] == "adapter":
                model = lora_wrap(model, "CAUSAL_LM", "gpt2")
    if s["precision"] == "bf16w":
        model = model.to(torch.bfloat16)
    n = s["steps"] * s["bs"] * s["accum"]
    chain = 0 if s["init"] == "scratch" else 1
    if s["task"] == "cls":
        x, y = classes(n, s["seq"], s["n_cls"], seed=s["seed"], offset=off)
    else:
        x = markov(n, s["seq"] + 1, seed=s["seed"], chain=chain, offset=off, order=s["order"])
        y = None

    def batch(i):  # micro-batch i: the data loader position follows the global step
        j = (i * s["bs"]) % n
        xb = x[j:j + s["bs"]]
        return xb, (y[j:j + s["bs"]] if y is not None else None)

    def loss_fn(xb, yb):
        if s["task"] == "cls":
            return model(xb, yb)
        if s["model"] == "gpt":
            return model(xb[:, :-1], xb[:, 1:])
        return model(input_ids=xb, labels=xb).loss

    return model, batch, loss_fn


def save_ckpt(out, s, model, opt, sched, step):
    """Checkpoint at `step` in the run's style; returns the paths written."""
    if s["ckpt"] == "pt":
        p = out / "checkpoints" / f"step_{step}.pt"
        p.parent.mkdir(exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "step": step,
                    "config": {k: v for k, v in s.items() if k not in ("resume", "prefix")}}, p)
        return [p]
    if s["ckpt"] == "st":
        d = out / "ckpt"
        d.mkdir(exist_ok=True)
        if s["save_dtype"] == "bf16":  # weights exported in bf16 (the fp32 master stays in memory)
            save_file({k: v.detach().to(torch.bfloat16).contiguous()
                       for k, v in model.state_dict().items()},
                      str(d / f"model_{step:06d}.safetensors"))
        else:
            save_model(model, str(d / f"model_{step:06d}.safetensors"))
        torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "step": step},
                   d / f"optim_{step:06d}.pt")
        return [d / f"model_{step:06d}.safetensors", d / f"optim_{step:06d}.pt"]
    d = out / f"checkpoint-{step}"  # hfdir: save_pretrained / safetensors + optimizer.pt
    d.mkdir(exist_ok=True)
    if hasattr(model, "save_pretrained"):
        model.save_pretrained(d)
    else:
        save_model(model, str(d / "model.safetensors"))
    torch.save(opt.state_dict(), d / "optimizer.pt")
    torch.save(sched.state_dict(), d / "scheduler.pt")
    (d / "state.json").write_text(json.dumps({"global_step": step}))
    return [d]


def load_ckpt(out, s, model, opt, sched, step):
    if s["ckpt"] == "pt":
        ck = torch.load(out / "checkpoints" / f"step_{step}.pt", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
    elif s["ckpt"] == "st":
        from safetensors.torch import load_model
        load_model(model, str(out / "ckpt" / f"model_{step:06d}.safetensors"))
        ck = torch.load(out / "ckpt" / f"optim_{step:06d}.pt", weights_only=False)
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
    else:
        d = out / f"checkpoint-{step}"
        if hasattr(model, "load_adapter") and (d / "adapter_model.safetensors").exists():
            from peft import set_peft_model_state_dict
            set_peft_model_state_dict(model, load_file(d / "adapter_model.safetensors"))
        elif (d / "model.safetensors").exists():
            from safetensors.torch import load_model
            load_model(model, str(d / "model.safetensors"), strict=False)
        opt.load_state_dict(torch.load(d / "optimizer.pt", weights_only=False))
        sched.load_state_dict(torch.load(d / "scheduler.pt", weights_only=False))


def save_init(out, s, model, opt, sched):
    if s["ckpt"] == "st":
        save_model(model, str(out / "init.safetensors"))
    else:
        save_ckpt(out, s, model, opt, sched, 0)


def job(out, s, start, end, log_path, log_mode, saved, header=None):
    """One process of training: build everything, load the checkpoint at `start` if > 0, run
    optimizer steps start+1..end (or iterations start..end-1 in the 'before' style)."""
    model, batch, loss_fn = build(s)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = s["lr"]
    if s["optim"] == "adamw" and hasattr(model, "peft_config"):
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr,
                                weight_decay=0.0)
    else:
        opt = make_optimizer(s["optim"], model, lr, s["wd"])
    warm = s["warmup"] if s["warmup"] is not None else max(1, s["steps"] // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lr_lambda(s["sched"], warm, s["steps"], min_ratio=s["min_ratio"]))
    if start > 0:
        load_ckpt(out, s, model, opt, sched, start)
    fields = ["step", "loss", "lr", "grad_norm"] + (["acc"] if s["task"] == "cls" else []) + \
        (["val_loss"] if s["eval_every"] else []) + (["dt_ms"] if s["time_col"] else [])
    lg = Logger(log_path, s["fmt"], log_mode, fields, s["line"], s["steps"])
    if header:
        for line in header:
            lg.text(line)
    elif start == 0:
        n = sum(p.numel() for p in model.parameters())
        nt = sum(p.numel() for p in params)
        lg.text(f"model: {n:,} parameters ({nt:,} trainable)")
        lg.text(f"optimizer: {type(opt).__name__}, {len(opt.param_groups)} param groups, "
                f"lr {lr:g}, schedule {s['sched']} (warmup {warm}), accum {s['accum']}")
    if start == 0 and s["init0"]:
        save_init(out, s, model, opt, sched)
    auto = torch.autocast("cpu", dtype=torch.bfloat16) if s["precision"] == "bf16" else None
    window, accs, t0 = [], [], time.time()
    for step in range(start + 1, end + 1):  # `step` = optimizer updates done after this one
        model.train()
        tot, acc = 0.0, 0.0
        for m in range(s["accum"]):
            xb, yb = batch((step - 1) * s["accum"] + m)
            if auto:
                with auto:
                    loss = loss_fn(xb, yb)
            else:
                loss = loss_fn(xb, yb)
            (loss / s["accum"]).backward()
            tot += loss.item() / s["accum"]
            if s["task"] == "cls":
                with torch.no_grad():
                    acc += (model(xb).argmax(-1) == yb).float().mean().item() / s["accum"]
        gn = None
        if s["clip"]:
            gn = torch.nn.utils.clip_grad_norm_(params, s["clip"]).item()
        cur_lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        window.append(tot)
        accs.append(acc)
        # 'after': log optimizer step k at k % log == 0 with the mean (or last) loss since the
        # previous line; 'before': log iteration index k-1 (0-based) with that batch's loss
        logk = step if s["style"] == "after" else step - 1
        if logk % s["log"] == 0:
            lv = sum(window) / len(window) if s["agg"] == "mean" else window[-1]
            r = {"step": logk, "loss": round(lv, 5), "lr": cur_lr,
                 "grad_norm": None if gn is None else round(gn, 4)}
            if s["task"] == "cls":
                r["acc"] = round(sum(accs) / len(accs), 4)
            if s["eval_every"] and step % s["eval_every"] == 0:
                model.eval()
                with torch.no_grad():
                    xb, yb = batch(10 ** 6 + step)
                    r["val_loss"] = round(loss_fn(xb, yb).item(), 5)
            if s["time_col"]:
                r["dt_ms"] = round((time.time() - t0) * 1000 / len(window), 2)
            lg.row(r)
            saved["log"].append((logk, lv))
            window, accs, t0 = [], [], time.time()
        if s["save_every"] and step % s["save_every"] == 0:
            saved["ckpts"].append((step, save_ckpt(out, s, model, opt, sched, step)))
            while s["keep_last"] and len(saved["ckpts"]) > s["keep_last"]:
                for p in saved["ckpts"].pop(0)[1]:
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
    lg.close()
    return model


def default_log_name(s):
    return s["log_name"] or {"jsonl": "metrics.jsonl", "csv": "metrics.csv",
                             "stdout": "train.log"}[s["fmt"]]


def run(out, spec, cache=None):
    """A plain run. Returns the logged (step, loss) points (both jobs for resumed runs)."""
    s = dict(DEFAULTS)
    s.update(spec)
    if s["lr"] is None:
        s["lr"] = {"adamw": 3e-3, "adamw_one_group": 3e-3, "adafactor": 3e-3, "sgd": 0.3}[s["optim"]]
        if s["init"] == "pretrained":
            s["lr"] /= 5
    out = Path(out)
    saved = {"log": [], "ckpts": []}
    r = s["resume"]
    name = default_log_name(s)
    if not r:
        job(out, s, 0, s["steps"], out / name, "w", saved)
        return saved["log"]
    # job 1: from cache (a long prefix shared by several runs) or trained here
    first = r.get("first_log", name)
    if s["prefix"]:
        src = Path(cache) / s["prefix"]
        for p in src.iterdir():
            if p.name != "saved.json":
                (shutil.copytree if p.is_dir() else shutil.copy2)(p, out / p.name)
        pre = json.loads((src / "saved.json").read_text())
        saved["log"] = [tuple(x) for x in pre["log"]]
        saved["ckpts"] = [(st, [out / q for q in ps]) for st, ps in pre["ckpts"]]
        if first != pre["first_log"]:
            (out / pre["first_log"]).rename(out / first)
    else:
        job(out, s, 0, r["stop"], out / first, "w", saved)
    saved["log"] = [p for p in saved["log"] if p[0] <= r["stop"]]
    # job 2: a new process, resumed from the checkpoint at r["at"]
    mode = r.get("second_log", "new")
    second = r.get("second_name", first if mode == "append" else name)
    header = r.get("banner")
    if mode == "only":  # a fresh folder: the first job's log (and its checkpoints) live elsewhere
        (out / first).unlink()
        saved["log"] = []
    job(out, s, r["at"], s["steps"], out / second, "a" if mode == "append" else "w", saved,
        header=header)
    for st, ps in list(saved["ckpts"]):
        if r.get("drop_old_ckpts") and (st < r["at"] or (mode == "only" and st == r["at"])):
            for p in ps:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    return saved["log"]


def make_prefix(cache, key, spec):
    """Job 1 of a long resumed run, trained once and shared (cached under cache/key)."""
    d = Path(cache) / key
    if (d / "saved.json").exists():
        return
    tmp = Path(cache) / (key + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    s = dict(DEFAULTS)
    s.update(spec)
    if s["lr"] is None:
        s["lr"] = {"adamw": 3e-3, "adamw_one_group": 3e-3, "adafactor": 3e-3, "sgd": 0.3}[s["optim"]]
    saved = {"log": [], "ckpts": []}
    first = "prefix.log"
    job(tmp, s, 0, s["resume"]["stop"], tmp / first, "w", saved)
    (tmp / "saved.json").write_text(json.dumps({
        "log": saved["log"], "first_log": first,
        "ckpts": [(st, [str(p.relative_to(tmp)) for p in ps]) for st, ps in saved["ckpts"]]}))
    tmp.rename(d)


def ckpt_steps(out):
    return sorted(int(p.stem.split("_")[1]) for p in (Path(out) / "checkpoints").glob("step_*.pt"))
