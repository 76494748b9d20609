"""HF Trainer, tiny BERT (random init) classifying synthetic support tickets into 5 topics.
Phase 'first': the job is killed (hard exit, like a SLURM preemption) at step 170, after checkpoint-150 was written.
Phase 'resume': the same command relaunched with resume_from_checkpoint=True finishes the 400 steps."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import torch
from datasets import Dataset
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainingArguments,
                          TrainerCallback, DataCollatorWithPadding)

name, phase = sys.argv[2], sys.argv[3]
out = common.run_dir(name, fresh=(phase == "first"))
common.seed_all(0)
tok = common.word_tokenizer(common.topic_vocab())
tr_x, tr_y = common.topic_docs(3000, seed=1, flip=0.05)
va_x, va_y = common.topic_docs(500, seed=2)


def enc(x, y):
    d = tok(list(x), truncation=True, max_length=40)
    d["labels"] = [int(v) for v in y]
    return Dataset.from_dict(dict(d))


train_ds, val_ds = enc(tr_x, tr_y), enc(va_x, va_y)
cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=64, num_labels=5, pad_token_id=tok.pad_token_id)
model = BertForSequenceClassification(cfg)


def metrics(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}


class Preempted(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        if phase == "first" and state.global_step == 170:
            print("simulated preemption at step", state.global_step, flush=True)
            os._exit(0)


args = TrainingArguments(output_dir=out, per_device_train_batch_size=32, per_device_eval_batch_size=128,
                         learning_rate=1e-3, weight_decay=0.01, warmup_steps=40, lr_scheduler_type="linear",
                         max_steps=400, logging_steps=10, eval_strategy="steps", eval_steps=50,
                         save_strategy="steps", save_steps=50, save_total_limit=2, report_to=["tensorboard"],
                         use_cpu=True, seed=0, dataloader_num_workers=0)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=val_ds,
                  data_collator=DataCollatorWithPadding(tok), compute_metrics=metrics,
                  callbacks=[Preempted()])
trainer.train(resume_from_checkpoint=(phase == "resume"))
trainer.save_model(os.path.join(out, "final"))
for r in trainer.state.log_history:
    if "eval_loss" in r:
        print(r["step"], round(r["eval_loss"], 4), round(r["eval_accuracy"], 4))
