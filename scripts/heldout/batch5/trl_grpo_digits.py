"""TRL GRPO on a tiny GPT-2 pretrained in-script.
Task: prompt 'digits: a b c d ->' ; the completion should continue with EVEN digits only and stop
with [EOS].  Reward = fraction of completion digits that are even."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

name = sys.argv[2]
variant = sys.argv[3] if len(sys.argv) > 3 else "frac"
out = common.run_dir(name)
common.seed_all(0)
DIG = ["d%d" % i for i in range(10)]
tok = common.word_tokenizer(["digits:", "->"] + DIG)
rng = np.random.default_rng(0)


def prompt_text(r):
    ds = r.choice(10, size=4, replace=False)
    return "digits: " + " ".join(DIG[i] for i in ds) + " ->"


# ---- 1. pretrain a tiny LM: after '->' a random (uniform) digit string of length 2..10, then EOS
cfg = GPT2Config(vocab_size=len(tok), n_positions=32, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
base = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
for step in range(250):
    texts = [prompt_text(rng) + " " + " ".join(DIG[i] for i in rng.integers(0, 10, rng.integers(2, 11))) + " [EOS]"
             for _ in range(32)]
    b = tok(texts, return_tensors="pt", padding=True)
    labels = b["input_ids"].masked_fill(b["attention_mask"] == 0, -100)
    loss = base(**b, labels=labels).loss
    opt.zero_grad(); loss.backward(); opt.step()
print("pretrain loss", loss.item())
base_dir = os.path.join(out, "base_lm")
base.save_pretrained(base_dir); tok.save_pretrained(base_dir)

# ---- 2. GRPO
prompts = [prompt_text(rng) for _ in range(512)]
ds = Dataset.from_dict({"prompt": prompts})


def digits_in_prompt(prompts, completions, **kw):
    rewards = []
    for p, c in zip(prompts, completions):
        allowed = {"d0", "d2", "d4", "d6", "d8"}
        toks = [t for t in c.split() if t.startswith("d")]
        hits = sum(t in allowed for t in toks)
        if variant == "frac":
            rewards.append(hits / max(len(toks), 1))
        else:
            rewards.append(hits / 5.0)
    return rewards


args = GRPOConfig(output_dir=out, learning_rate=float(os.environ.get("LR", 5e-4)), per_device_train_batch_size=16,
                  num_generations=8, max_completion_length=12, max_steps=int(os.environ.get("STEPS", 150)),
                  logging_steps=5, save_steps=50, save_total_limit=1, beta=0.04, temperature=1.0,
                  report_to=["tensorboard"], use_cpu=True, seed=0, lr_scheduler_type="constant_with_warmup",
                  warmup_steps=5, dataloader_num_workers=0, bf16=False)
trainer = GRPOTrainer(model=base_dir, reward_funcs=digits_in_prompt, args=args, train_dataset=ds,
                      processing_class=tok)
trainer.train()
trainer.save_model(os.path.join(out, "final"))
for r in trainer.state.log_history[::3]:
    print({k: round(v, 3) for k, v in r.items() if k in ("step", "reward", "kl", "entropy", "completions/mean_length", "completions/clipped_ratio", "loss")})
