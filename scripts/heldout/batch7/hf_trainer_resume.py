"""HF Trainer, tiny BERT (from config) sequence classifier, word-level local tokenizer.

logging_strategy / eval_strategy = "epoch", checkpoints every 2 epochs (save_steps), TensorBoard.
The first process is SIGKILLed 12 steps into epoch 6 (epochs 1-5 already logged; last checkpoint is
checkpoint-128 = end of epoch 4). The same command is then re-run with resume_from_checkpoint=True,
so epoch 5 is trained and logged twice (once in each TensorBoard run dir) and train.log holds both
processes' output. Healthy.
"""
import argparse
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--phase", default="driver", choices=["driver", "first", "resume"])
args = p.parse_args()

if args.phase == "driver":
    fresh_dir(args.out)
    r1 = subprocess.run([sys.executable, __file__, "--out", args.out, "--phase", "first"])
    print("first process exit code", r1.returncode)
    assert r1.returncode == -signal.SIGKILL, r1.returncode
    r2 = subprocess.run([sys.executable, __file__, "--out", args.out, "--phase", "resume"])
    sys.exit(r2.returncode)

setup(0)
out = args.out
tee_output(os.path.join(out, "train.log"), append=args.phase == "resume")

import numpy as np  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast,  # noqa: E402
                          Trainer, TrainerCallback, TrainingArguments)

POS = ["good", "great", "fine", "nice", "happy", "bright"]
NEG = ["bad", "poor", "sad", "dull", "awful", "grim"]
NEU = ["the", "a", "day", "film", "food", "room", "was", "is", "very", "and", "it", "we"]
words = POS + NEG + NEU
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in words:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                              sep_token="[SEP]")

rng = np.random.default_rng(0)


def example():
    n = rng.integers(6, 14)
    k_pos, k_neg = rng.integers(0, 4, size=2)
    while k_pos == k_neg:
        k_pos, k_neg = rng.integers(0, 4, size=2)
    toks = list(rng.choice(NEU, n)) + list(rng.choice(POS, k_pos)) + list(rng.choice(NEG, k_neg))
    rng.shuffle(toks)
    return {"text": "[CLS] " + " ".join(toks), "label": int(k_pos > k_neg)}


train = Dataset.from_list([example() for _ in range(1024)])
val = Dataset.from_list([example() for _ in range(256)])


def enc(b):
    return tok(b["text"], truncation=True, max_length=32, padding="max_length")


train = train.map(enc, batched=True, remove_columns=["text"])
val = val.map(enc, batched=True, remove_columns=["text"])

model = BertForSequenceClassification(BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2,
                                                 num_attention_heads=4, intermediate_size=128,
                                                 max_position_embeddings=64, num_labels=2))


def metrics(ev):
    logits, labels = ev
    return {"accuracy": float((logits.argmax(-1) == labels).mean())}


STEPS_PER_EPOCH = 1024 // 32


class SimulatedPreemption(TrainerCallback):
    """Stands in for the OOM-killer / spot preemption: SIGKILL mid-way through epoch 6."""

    def on_step_end(self, a, state, control, **kw):
        if state.global_step == 5 * STEPS_PER_EPOCH + 12:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)


targs = TrainingArguments(
    output_dir=out, num_train_epochs=8, per_device_train_batch_size=32, per_device_eval_batch_size=64,
    learning_rate=1e-3, weight_decay=0.01, warmup_steps=20, lr_scheduler_type="linear",
    logging_strategy="epoch", eval_strategy="epoch", save_strategy="steps", save_steps=2 * STEPS_PER_EPOCH,
    save_total_limit=2, report_to=["tensorboard"], seed=0, use_cpu=True, disable_tqdm=True,
    dataloader_num_workers=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=train, eval_dataset=val, compute_metrics=metrics,
                  processing_class=tok, callbacks=[SimulatedPreemption()] if args.phase == "first" else [])
trainer.train(resume_from_checkpoint=True if args.phase == "resume" else None)
trainer.save_model(out)
trainer.save_state()
