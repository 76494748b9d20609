"""DPO with TRL on a tiny GPT-2 that was first SFT'd locally (healthy).

sft_init/ holds the locally saved SFT start weights + tokenizer (trained here with a plain loop on a
mix of correct and sloppy continuations). DPO then prefers correct counting continuations.
HF-style output dir: checkpoint-N/ with trainer_state.json (loss, rewards/*, logps/*).
"""
import json
import os
import random
import sys

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, set_seed
from trl import DPOConfig, DPOTrainer

out = sys.argv[1]
init_dir = os.path.join(out, "sft_init")
os.makedirs(init_dir, exist_ok=True)
set_seed(0)
torch.set_num_threads(1)

words = [str(i) for i in range(30)] + ["count", "from", ":", "done"]
vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2, **{w: i + 3 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                              unk_token="<pad>")

rng = random.Random(0)


def make_example(r):
    a = r.randint(0, 20)
    n = r.randint(3, 6)
    prompt = f"count from {a} :"
    good = " " + " ".join(str(a + 1 + k) for k in range(n)) + " done"
    bad_seq = [a + 1 + k for k in range(n)]
    # sloppy continuation: skips or repeats numbers somewhere
    j = r.randrange(1, n)
    bad_seq[j] = bad_seq[j] + r.choice([1, 2, -1, 3])
    bad_seq = [min(max(b, 0), 29) for b in bad_seq]
    bad = " " + " ".join(map(str, bad_seq)) + " done"
    return prompt, good, bad


# ---- stage 0: quick SFT on a noisy mix (60% correct, 40% sloppy) and save as the DPO start point ----
cfg = GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=1, eos_token_id=2, pad_token_id=0)
sft = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(sft.parameters(), lr=2e-3)
sft_log = open(os.path.join(init_dir, "sft_log.jsonl"), "w")
for step in range(300):
    texts = []
    for _ in range(32):
        p, g, b = make_example(rng)
        texts.append("<bos> " + p + (g if rng.random() < 0.6 else b) + " <eos>")
    enc = tok(texts, return_tensors="pt", padding=True)
    labels = enc.input_ids.masked_fill(enc.attention_mask == 0, -100)
    loss = sft(**enc, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 20 == 0 or step == 299:
        sft_log.write(json.dumps({"step": step, "loss": round(loss.item(), 4)}) + "\n")
sft_log.close()
sft.save_pretrained(init_dir)
tok.save_pretrained(init_dir)

# ---- stage 1: DPO ----
rows = []
for _ in range(1200):
    p, g, b = make_example(rng)
    rows.append({"prompt": p, "chosen": g, "rejected": b})
train = Dataset.from_list(rows[:1100])
evald = Dataset.from_list(rows[1100:])

policy = GPT2LMHeadModel.from_pretrained(init_dir)
tok = PreTrainedTokenizerFast.from_pretrained(init_dir)
args = DPOConfig(
    output_dir=out,
    beta=0.1,
    learning_rate=5e-4,
    lr_scheduler_type="linear",
    warmup_steps=10,
    per_device_train_batch_size=16,
    per_device_eval_batch_size=32,
    num_train_epochs=2,
    logging_steps=5,
    eval_strategy="steps",
    eval_steps=35,
    save_strategy="steps",
    save_steps=69,
    max_length=32,
    report_to=["tensorboard"],
    use_cpu=True,
    disable_tqdm=True,
    seed=0,
)
trainer = DPOTrainer(model=policy, args=args, train_dataset=train, eval_dataset=evald, processing_class=tok)
trainer.train()
trainer.save_model(os.path.join(out, "final"))
