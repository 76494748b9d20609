"""HF: pretrain a tiny BERT with masked-LM on unlabeled synthetic ticket text (saved to base_mlm/), then
fine-tune BertForSequenceClassification from it on a small labelled set with the HF Trainer."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import torch
from datasets import Dataset
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, Trainer,
                          TrainingArguments, DataCollatorWithPadding, DataCollatorForLanguageModeling)

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(0)
tok = common.word_tokenizer(common.topic_vocab(n_topics=6))
# ---- 1. MLM pretraining (unlabeled)
un_x, _ = common.topic_docs(4000, n_topics=6, seed=10, kw_lo=3, kw_hi=6, distract=0)
un = Dataset.from_dict(dict(tok(un_x, truncation=True, max_length=40)))
cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=64, pad_token_id=tok.pad_token_id)
mlm = BertForMaskedLM(cfg)
base_dir = os.path.join(out, "base_mlm")
pt_args = TrainingArguments(output_dir=base_dir, per_device_train_batch_size=64, learning_rate=2e-3,
                            warmup_steps=30, max_steps=350, logging_steps=50, save_strategy="no",
                            report_to="none", use_cpu=True, seed=0)
pt = Trainer(model=mlm, args=pt_args, train_dataset=un,
             data_collator=DataCollatorForLanguageModeling(tok, mlm_probability=0.2))
pt.train()
pt.save_model(base_dir); tok.save_pretrained(base_dir)
print("mlm losses", [round(r["loss"], 3) for r in pt.state.log_history if "loss" in r])

# ---- 2. fine-tune on a small labelled set
tr_x, tr_y = common.topic_docs(400, n_topics=6, seed=1, flip=0.03)
va_x, va_y = common.topic_docs(600, n_topics=6, seed=2)


def enc(x, y):
    d = tok(list(x), truncation=True, max_length=40)
    d["labels"] = [int(v) for v in y]
    return Dataset.from_dict(dict(d))


model = BertForSequenceClassification.from_pretrained(base_dir, num_labels=6)
args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, per_device_eval_batch_size=128,
                         learning_rate=5e-4, weight_decay=0.01, warmup_steps=0.1, lr_scheduler_type="linear",
                         num_train_epochs=8, logging_steps=5, eval_strategy="epoch", save_strategy="epoch",
                         save_total_limit=2, load_best_model_at_end=True, metric_for_best_model="accuracy",
                         report_to=["tensorboard"], use_cpu=True, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=enc(tr_x, tr_y), eval_dataset=enc(va_x, va_y),
                  data_collator=DataCollatorWithPadding(tok),
                  compute_metrics=lambda p: {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())})
trainer.train()
trainer.save_model(os.path.join(out, "final"))
for r in trainer.state.log_history:
    if "eval_loss" in r:
        print(r["epoch"], round(r["eval_loss"], 4), round(r["eval_accuracy"], 4))
