"""HF Trainer, tiny BERT from scratch on a 3-class 'intent' task with variable-length utterances;
eval every 40 steps, TensorBoard reporting, checkpoints every 120 steps.
BUG: the eval split is sorted by length (to cut padding in eval batches) but only the
input sequences are reordered - the label array keeps the original order, so eval labels no
longer belong to their inputs.
usage: python hf_tinybert_intents.py OUT_RUNS_DIR RUN_NAME
"""
import sys
import common
import numpy as np
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed

name = sys.argv[2]
out = common.run_dir(name)
set_seed(5)
V, C = 100, 3

tx, ty = common.keyword_sequences(3000, n_classes=C, vocab=V, kw_per_class=8, seed=31, min_len=6,
                                  max_len=50, kw_lo=1, kw_hi=4, distract_hi=2, flip=0.05, bg_zipf=0.8)
vx, vy = common.keyword_sequences(600, n_classes=C, vocab=V, kw_per_class=8, seed=32, min_len=6,
                                  max_len=50, kw_lo=1, kw_hi=4, distract_hi=2, flip=0.05, bg_zipf=0.8)
# bucket the eval set by length -> much less padding per eval batch
order = np.argsort([len(s) for s in vx], kind="stable")
vx = [vx[i] for i in order]

cfg = BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=64, num_labels=C,
                 id2label={0: "billing", 1: "cancel", 2: "tech_support"},
                 label2id={"billing": 0, "cancel": 1, "tech_support": 2})
model = BertForSequenceClassification(cfg)


def compute_metrics(p):
    return {"accuracy": float((np.argmax(p.predictions, -1) == p.label_ids).mean())}


args = TrainingArguments(output_dir=out, per_device_train_batch_size=32, per_device_eval_batch_size=64,
                         num_train_epochs=4, learning_rate=5e-4, warmup_steps=40, weight_decay=0.01,
                         eval_strategy="steps", eval_steps=40, logging_steps=20, save_strategy="steps",
                         save_steps=120, save_total_limit=2, report_to="tensorboard", use_cpu=True,
                         disable_tqdm=True, seed=5)
trainer = Trainer(model=model, args=args, train_dataset=common.SeqDataset(tx, ty),
                  eval_dataset=common.SeqDataset(vx, vy), data_collator=common.pad_collate,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(out)
trainer.save_state()
