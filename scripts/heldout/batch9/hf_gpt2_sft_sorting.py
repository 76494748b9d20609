"""Supervised fine-tuning of a tiny GPT-2 on a "sort these numbers" instruction task (HF Trainer).

Start weights are a small GPT-2 saved locally under base_model/ (briefly pretrained here on raw number
streams so the fine-tune starts from a non-random model). Examples are tokenized to a fixed length and
trained with the standard causal-LM objective.
"""
import json
import os
import random
import sys

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          default_data_collator, set_seed)

out = sys.argv[1]
base_dir = os.path.join(out, "base_model")
os.makedirs(base_dir, exist_ok=True)
set_seed(0)
torch.set_num_threads(1)

words = [str(i) for i in range(40)] + ["sort", ":", "->"]
vocab = {"<|endoftext|>": 0, **{w: i + 1 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                              unk_token="<|endoftext|>")
tok.pad_token = tok.eos_token  # GPT-2 has no pad token

# ---- base model: short LM pretraining on random number streams, saved as the fine-tune start point ----
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=96, n_layer=3, n_head=4,
                 bos_token_id=0, eos_token_id=0)
base = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(base.parameters(), lr=1e-3)
r0 = random.Random(1)
for step in range(150):
    x = torch.tensor([[r0.randint(1, 40) for _ in range(32)] for _ in range(32)])
    x = torch.sort(x, dim=1).values if step % 2 else x  # streams are sometimes sorted
    loss = base(input_ids=x, labels=x).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
base.save_pretrained(base_dir)
tok.save_pretrained(base_dir)

# ---- SFT data ----
MAXLEN = 48


def make_example(r):
    n = r.randint(3, 7)
    xs = [r.randint(0, 39) for _ in range(n)]
    return {"text": "sort : " + " ".join(map(str, xs)) + " -> " + " ".join(map(str, sorted(xs))) + " <|endoftext|>"}


rng = random.Random(0)
train = Dataset.from_list([make_example(rng) for _ in range(4000)])
evald = Dataset.from_list([make_example(rng) for _ in range(300)])


def tokenize(batch):
    enc = tok(batch["text"], padding="max_length", truncation=True, max_length=MAXLEN)
    enc["labels"] = [ids.copy() for ids in enc["input_ids"]]
    return enc


train = train.map(tokenize, batched=True, remove_columns=["text"])
evald = evald.map(tokenize, batched=True, remove_columns=["text"])

model = GPT2LMHeadModel.from_pretrained(base_dir)
args = TrainingArguments(
    output_dir=out,
    num_train_epochs=2,
    per_device_train_batch_size=32,
    per_device_eval_batch_size=64,
    learning_rate=1e-3,
    lr_scheduler_type="linear",
    warmup_steps=20,
    weight_decay=0.01,
    logging_steps=10,
    eval_strategy="steps",
    eval_steps=50,
    save_strategy="steps",
    save_steps=125,
    save_total_limit=2,
    report_to=["tensorboard"],
    use_cpu=True,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evald,
                  data_collator=default_data_collator, processing_class=tok)
trainer.train()
trainer.save_model(os.path.join(out, "final"))

# greedy-decode a few held-out prompts as a sanity check
model.eval()
samples = []
for ex in [make_example(random.Random(100 + i)) for i in range(20)]:
    prompt = ex["text"].split("->")[0] + "->"
    ids = tok(prompt, return_tensors="pt").input_ids
    gen = model.generate(ids, max_new_tokens=10, do_sample=False, pad_token_id=0, eos_token_id=0)
    pred = tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True).strip()
    target = ex["text"].split("->")[1].replace("<|endoftext|>", "").strip()
    samples.append({"prompt": prompt, "target": target, "prediction": pred, "exact": pred == target})
with open(os.path.join(out, "generation_samples.jsonl"), "w") as f:
    for s in samples:
        f.write(json.dumps(s) + "\n")
print("exact match:", sum(s["exact"] for s in samples) / len(samples))
