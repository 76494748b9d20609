"""HF Trainer fine-tune of a tiny BERT on 'support tickets' (4 topics) from a new product line.
The encoder + head were first trained (in this script, in a temp dir, not logged) on the old
product line (same 4 topics, different background vocabulary/statistics); only the fine-tune is
logged.  HEALTHY: train loss starts low because the start point is already good at the task.
usage: python hf_tinybert_domain_ft.py OUT_RUNS_DIR RUN_NAME
"""
import sys, os, tempfile
import common
import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed

name = sys.argv[2]
out = common.run_dir(name)
set_seed(17)
V, C = 120, 4

# ---- stage 0: "pretrained" checkpoint from the old domain (uniform background, more keywords)
src_x, src_y = common.keyword_sequences(6000, n_classes=C, vocab=V, seed=100, kw_lo=3, kw_hi=6, flip=0.05)
cfg = BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=64, num_labels=C,
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
base = BertForSequenceClassification(cfg)
pre_dir = os.path.join(tempfile.mkdtemp(), "tinybert-tickets-v1")
pre_args = TrainingArguments(output_dir=pre_dir, per_device_train_batch_size=64, num_train_epochs=3,
                             learning_rate=1e-3, warmup_steps=30, weight_decay=0.01, save_strategy="no",
                             logging_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
                             seed=17)
Trainer(model=base, args=pre_args, train_dataset=common.SeqDataset(src_x, src_y),
        data_collator=common.pad_collate).train()
base.save_pretrained(pre_dir)

# ---- stage 1: fine-tune on the new domain (zipfian background, fewer keywords per ticket)
# one of each topic's six keywords is a product-specific new word (background for the old model)
kw_new = np.arange(4, 4 + C * 6).reshape(C, 6)
kw_new[:, 5] = np.arange(80, 80 + C)
tx, ty = common.keyword_sequences(2400, n_classes=C, vocab=V, seed=200, kw_lo=2, kw_hi=4, bg_zipf=1.1,
                                  flip=0.08, distract_hi=3, kw_table=kw_new)
vx, vy = common.keyword_sequences(600, n_classes=C, vocab=V, seed=201, kw_lo=2, kw_hi=4, bg_zipf=1.1,
                                  flip=0.08, distract_hi=3, kw_table=kw_new)
model = BertForSequenceClassification.from_pretrained(pre_dir)


def compute_metrics(p):
    return {"accuracy": float((np.argmax(p.predictions, -1) == p.label_ids).mean())}


args = TrainingArguments(output_dir=out, per_device_train_batch_size=32, per_device_eval_batch_size=128,
                         num_train_epochs=4, learning_rate=2e-4, warmup_steps=20, weight_decay=0.01,
                         lr_scheduler_type="linear", eval_strategy="steps", eval_steps=25,
                         logging_strategy="steps", logging_steps=10, save_strategy="steps", save_steps=100,
                         save_total_limit=2, load_best_model_at_end=True, metric_for_best_model="eval_loss",
                         report_to="none", use_cpu=True, disable_tqdm=True, seed=17)
trainer = Trainer(model=model, args=args, train_dataset=common.SeqDataset(tx, ty),
                  eval_dataset=common.SeqDataset(vx, vy), data_collator=common.pad_collate,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(out)
trainer.save_state()
