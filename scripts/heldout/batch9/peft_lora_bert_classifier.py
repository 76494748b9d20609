"""LoRA fine-tuning (PEFT) of a tiny BERT encoder for sequence classification (HF Trainer).

base_model/ holds the locally saved start weights: a small BERT MLM-pretrained here on unlabeled
synthetic token sequences. The classifier is built from it with from_pretrained and adapted with LoRA.
"""
import json
import os
import sys

import numpy as np
import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, Trainer,
                          TrainingArguments, set_seed)

out = sys.argv[1]
base_dir = os.path.join(out, "base_model")
os.makedirs(base_dir, exist_ok=True)
set_seed(0)
torch.set_num_threads(1)

V, L = 64, 24  # vocab (0=pad,1=cls,2=sep,3=mask, 4..63 words), sequence length
rng = np.random.default_rng(0)
# words come in 6 "topics"; a sequence mixes two topics
topics = np.array_split(np.arange(4, V), 6)


def sample_seqs(n):
    seqs, labels = [], []
    for _ in range(n):
        t1, t2 = rng.choice(6, 2, replace=False)
        k = rng.integers(14, 20)  # tokens from the dominant topic
        toks = np.concatenate([rng.choice(topics[t1], k), rng.choice(topics[t2], L - 2 - k)])
        rng.shuffle(toks)
        seqs.append(np.concatenate([[1], toks, [2]]))
        labels.append(int(t1 % 3))  # label = dominant topic group
    return np.array(seqs), np.array(labels)


# ---- MLM pretraining of the base encoder ----
cfg = BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 max_position_embeddings=32, pad_token_id=0, num_labels=3)
mlm = BertForMaskedLM(cfg)
opt = torch.optim.AdamW(mlm.parameters(), lr=1e-3)
mlm_log = []
X_unl, _ = sample_seqs(8000)
for step in range(250):
    x = torch.tensor(X_unl[rng.choice(len(X_unl), 64)])
    labels = x.clone()
    m = (torch.rand(x.shape) < 0.15) & (x > 3)
    labels[~m] = -100
    x = x.masked_fill(m, 3)
    loss = mlm(input_ids=x, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 25 == 0 or step == 249:
        mlm_log.append({"step": step, "mlm_loss": round(loss.item(), 4)})
mlm.save_pretrained(base_dir)
with open(os.path.join(base_dir, "pretrain_log.json"), "w") as f:
    json.dump(mlm_log, f, indent=0)

# ---- LoRA fine-tuning on the labelled task ----
Xtr, ytr = sample_seqs(3000)
Xva, yva = sample_seqs(500)
mk = lambda X, y: Dataset.from_dict({"input_ids": X.tolist(), "attention_mask": np.ones_like(X).tolist(),
                                     "labels": y.tolist()})
train_ds, val_ds = mk(Xtr, ytr), mk(Xva, yva)

model = BertForSequenceClassification.from_pretrained(base_dir, num_labels=3)
lora_cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["query", "value"])
model = get_peft_model(model, lora_cfg)
model.print_trainable_parameters()


def compute_metrics(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}


args = TrainingArguments(
    output_dir=out,
    num_train_epochs=6,
    per_device_train_batch_size=32,
    per_device_eval_batch_size=128,
    learning_rate=3e-3,
    lr_scheduler_type="linear",
    warmup_steps=30,
    logging_steps=20,
    eval_strategy="epoch",
    save_strategy="epoch",
    save_total_limit=2,
    report_to=["tensorboard"],
    label_names=["labels"],
    use_cpu=True,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=val_ds, compute_metrics=compute_metrics)
trainer.train()
model.save_pretrained(os.path.join(out, "final_adapter"))
print(json.dumps(trainer.evaluate()))
