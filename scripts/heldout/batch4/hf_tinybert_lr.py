"""HF Trainer, tiny BERT from scratch on a 5-class 'news topic' task; per-epoch eval and save,
train loss logged every 25 steps.
BUG: learning_rate=3e-2 (100x the intended 3e-4 used for this model size).
usage: python hf_tinybert_lr.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed

name = sys.argv[2]
out = common.run_dir(name)
set_seed(23)
V, C = 160, 5

tx, ty = common.keyword_sequences(4000, n_classes=C, vocab=V, kw_per_class=10, seed=41, min_len=16,
                                  max_len=48, kw_lo=2, kw_hi=5, distract_hi=2, flip=0.03)
vx, vy = common.keyword_sequences(800, n_classes=C, vocab=V, kw_per_class=10, seed=42, min_len=16,
                                  max_len=48, kw_lo=2, kw_hi=5, distract_hi=2, flip=0.03)

cfg = BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=64, num_labels=C)
model = BertForSequenceClassification(cfg)


def compute_metrics(p):
    preds = np.argmax(p.predictions, -1)
    return {"accuracy": float((preds == p.label_ids).mean())}


args = TrainingArguments(output_dir=out, per_device_train_batch_size=64, per_device_eval_batch_size=128,
                         num_train_epochs=5, learning_rate=3e-2, warmup_steps=30, weight_decay=0.01,
                         eval_strategy="epoch", save_strategy="epoch", save_total_limit=2, logging_steps=25,
                         report_to="none", use_cpu=True, disable_tqdm=True, seed=23)
trainer = Trainer(model=model, args=args, train_dataset=common.SeqDataset(tx, ty),
                  eval_dataset=common.SeqDataset(vx, vy), data_collator=common.pad_collate,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(out)
trainer.save_state()
