"""Tiny Llama char-level LM pretraining on a synthetic toy-grammar corpus (HF Trainer).

Healthy run: linear warmup + cosine decay, periodic eval, checkpoints every 100 steps.
"""
import json
import os
import random
import sys

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments, set_seed

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
set_seed(0)
torch.set_num_threads(1)

SUBJ = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher", "her brother"]
VERB = ["sees", "likes", "follows", "finds", "helps", "watches", "calls"]
OBJ = ["the ball", "a red car", "the river", "some bread", "the garden", "a blue box", "the moon"]
ADV = ["today", "again", "slowly", "at night", "every day", "quietly", ""]


def sentence(rng):
    s = f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)} {rng.choice(ADV)}".strip()
    if rng.random() < 0.3:
        s += f" and {rng.choice(SUBJ)} {rng.choice(VERB)} it"
    return s + "."


rng = random.Random(0)
chars = sorted(set("".join(SUBJ + VERB + OBJ + ADV) + " .and it"))
vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2}
for c in chars:
    vocab.setdefault(c, len(vocab))
with open(os.path.join(out, "vocab.json"), "w") as f:
    json.dump(vocab, f)

SEQ = 64


class CharLM(Dataset):
    def __init__(self, n, seed):
        r = random.Random(seed)
        self.items = []
        for _ in range(n):
            ids = [1]
            while len(ids) < SEQ + 1:
                ids += [vocab[c] for c in sentence(r)] + [2]
            self.items.append(torch.tensor(ids[:SEQ]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x = self.items[i]
        return {"input_ids": x, "labels": x.clone(), "attention_mask": torch.ones_like(x)}


train_ds, eval_ds = CharLM(3000, 1), CharLM(200, 2)

cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=True)
model = LlamaForCausalLM(cfg)

args = TrainingArguments(
    output_dir=out,
    max_steps=360,
    per_device_train_batch_size=16,
    per_device_eval_batch_size=32,
    learning_rate=2e-3,
    lr_scheduler_type="cosine",
    warmup_steps=36,
    weight_decay=0.01,
    logging_steps=10,
    eval_strategy="steps",
    eval_steps=60,
    save_strategy="steps",
    save_steps=120,
    save_total_limit=3,
    report_to=["tensorboard"],
    seed=0,
    use_cpu=True,
    dataloader_num_workers=0,
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds)
trainer.train()
trainer.save_model(os.path.join(out, "final"))
print(json.dumps(trainer.evaluate()))
