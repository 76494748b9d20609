"""Accelerate: tiny GPT-2 (from config) char LM, manual gradient accumulation (4 micro-batches).

Healthy: loss / accum_steps before accelerator.backward, SGD(momentum=0.9) + warmup/cosine
(transformers.get_cosine_schedule_with_warmup) stepped once per optimizer step.
Layout: accelerate tensorboard tracker (tb/<project>/events...), accelerator.save_state
checkpoints (checkpoints/checkpoint_<i>/ model.safetensors, optimizer.bin, scheduler.bin,
random_states_0.pkl), config.json, train.log.
variants: healthy | accum_not_divided (the micro-batch loss is not divided by accum_steps, so the
accumulated gradient is 4x too large: the effective LR is 4x the configured one).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "accum_not_divided"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import logging  # noqa: E402
import random  # noqa: E402

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from accelerate.logging import get_logger  # noqa: E402
from accelerate.utils import ProjectConfiguration, set_seed  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, get_cosine_schedule_with_warmup  # noqa: E402

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO,
                    stream=sys.stdout)
logger = get_logger("train_lm")

cfg = {"model": "gpt2-tiny", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 64, "seq_len": 64,
       "micro_batch_size": 16, "gradient_accumulation_steps": 4, "optimizer": "sgd", "momentum": 0.9,
       "learning_rate": 0.3, "lr_scheduler": "cosine", "warmup_steps": 10, "max_grad_norm": None,
       "num_update_steps": 100, "eval_every": 20, "checkpoint_every": 50, "seed": 0}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
set_seed(0)

# procedurally generated "sentences" from a tiny grammar
SUBJ = ["the cat", "a dog", "my bird", "the fox", "our cow"]
VERB = ["sees", "eats", "likes", "chases", "finds"]
OBJ = ["the ball", "a fish", "some corn", "the moon", "a box"]
rng = random.Random(0)


def sentence():
    return f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)}. "


text = "".join(sentence() for _ in range(6000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
ids = torch.tensor([stoi[c] for c in text])
n_val = 8192
train_ids, val_ids = ids[:-n_val], ids[-n_val:]
S = cfg["seq_len"]


def batches(src, bs, gen):
    while True:
        starts = torch.randint(0, len(src) - S - 1, (bs,), generator=gen)
        x = torch.stack([src[s:s + S] for s in starts])
        yield {"input_ids": x, "labels": x}


model = GPT2LMHeadModel(GPT2Config(vocab_size=len(chars), n_positions=cfg["n_positions"], n_embd=cfg["n_embd"],
                                   n_layer=cfg["n_layer"], n_head=cfg["n_head"], resid_pdrop=0.0, embd_pdrop=0.0,
                                   attn_pdrop=0.0))
opt = torch.optim.SGD(model.parameters(), lr=cfg["learning_rate"], momentum=cfg["momentum"])
sched = get_cosine_schedule_with_warmup(opt, cfg["warmup_steps"], cfg["num_update_steps"])
accelerator = Accelerator(cpu=True, log_with="tensorboard",
                          project_config=ProjectConfiguration(project_dir=out, logging_dir=os.path.join(out, "tb"),
                                                              automatic_checkpoint_naming=True, total_limit=2))
model, opt, sched = accelerator.prepare(model, opt, sched)
accelerator.init_trackers("char_gpt2", config=cfg)
logger.info(f"vocab={len(chars)} params={sum(p.numel() for p in model.parameters())}")

gen = torch.Generator().manual_seed(0)
train_iter = batches(train_ids, cfg["micro_batch_size"], gen)
A = cfg["gradient_accumulation_steps"]
history = []
for step in range(1, cfg["num_update_steps"] + 1):
    model.train()
    tot = 0.0
    for micro in range(A):
        loss = model(**next(train_iter)).loss
        tot += loss.item() / A
        if args.variant == "healthy":
            loss = loss / A
        accelerator.backward(loss)
    gnorm = torch.sqrt(sum((p.grad.float() ** 2).sum() for p in model.parameters() if p.grad is not None))
    opt.step()
    sched.step()
    opt.zero_grad()
    lr = sched.get_last_lr()[0]
    accelerator.log({"train/loss": tot, "train/lr": lr, "train/grad_norm": gnorm.item()}, step=step)
    history.append(tot)
    if step % 5 == 0:
        logger.info(f"step {step} | loss {tot:.4f} | lr {lr:.5f} | grad_norm {gnorm.item():.3f}")
    if step % cfg["eval_every"] == 0:
        model.eval()
        with torch.no_grad():
            vg = torch.Generator().manual_seed(123)
            vit = batches(val_ids, 32, vg)
            vl = sum(model(**next(vit)).loss.item() for _ in range(4)) / 4
        accelerator.log({"eval/loss": vl, "eval/ppl": math.exp(min(vl, 50))}, step=step)
        logger.info(f"step {step} | eval_loss {vl:.4f}")
    if step % cfg["checkpoint_every"] == 0:
        accelerator.save_state()
accelerator.end_training()
