# Tiny BERT (from config, no downloads). Stage 1: brief "pretraining" on a large synthetic
# set with a plain loop, save_pretrained(). Stage 2: fine-tune from that checkpoint with HF Trainer
# on a small labelled set, eval each epoch, logging_steps=10, TensorBoard + trainer_state.json.
import os, sys, random
import numpy as np, torch
from datasets import Dataset
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainingArguments,
                          set_seed)

out = sys.argv[1]
torch.set_num_threads(1)
set_seed(0)
VOCAB, L = 120, 32
rng = np.random.default_rng(0)

def make(n, noise=0.08):
    # label 1 if "positive" tokens (10..19) outnumber "negative" tokens (20..29)
    ids = rng.integers(30, VOCAB, size=(n, L))
    ids[:, 0] = 2  # [CLS]
    npos = rng.integers(0, 6, n); nneg = rng.integers(0, 6, n)
    for i in range(n):
        pos = rng.choice(np.arange(1, L), npos[i] + nneg[i], replace=False)
        ids[i, pos[:npos[i]]] = rng.integers(10, 20, npos[i])
        ids[i, pos[npos[i]:]] = rng.integers(20, 30, nneg[i])
    y = (npos > nneg).astype(int)
    tie = npos == nneg
    y[tie] = rng.integers(0, 2, tie.sum())
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return ids, y

def to_ds(ids, y):
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": np.ones_like(ids).tolist(),
                              "labels": y.tolist()})

cfg = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128, max_position_embeddings=64, num_labels=2)

# ---- stage 1: pretrain on lots of data (plain loop, nothing logged but the checkpoint)
pre_dir = os.path.join(out, "pretrained")
model = BertForSequenceClassification(cfg)
Xp, yp = make(3000)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.train()
for ep in range(5):
    perm = rng.permutation(len(Xp))
    for i in range(0, len(Xp), 32):
        b = perm[i:i + 32]
        loss = model(input_ids=torch.tensor(Xp[b]), labels=torch.tensor(yp[b])).loss
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"pretrain epoch {ep} last batch loss {loss.item():.4f}", flush=True)
model.save_pretrained(pre_dir)

# ---- stage 2: fine-tune on a small labelled set
Xtr, ytr = make(320)
Xva, yva = make(400)
train_ds, eval_ds = to_ds(Xtr, ytr), to_ds(Xva, yva)
model = BertForSequenceClassification.from_pretrained(pre_dir)

def compute_metrics(p):
    preds = p.predictions.argmax(-1)
    return {"accuracy": float((preds == p.label_ids).mean())}

args = TrainingArguments(
    output_dir=os.path.join(out, "finetune"),
    eval_strategy="epoch",
    save_strategy="epoch",
    logging_steps=10,
    num_train_epochs=5,
    learning_rate=3e-4,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=64,
    weight_decay=0.01,
    warmup_steps=10,
    report_to="tensorboard",
    use_cpu=True,
    save_total_limit=2,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(os.path.join(out, "finetune", "final"))
