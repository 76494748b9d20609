"""Encoder-decoder runs with HF Seq2SeqTrainer: a tiny T5 built from a config (d_model 32, two
encoder and two decoder layers) and a word-level fast tokenizer built here (T5's ids: pad 0,
</s> 1, unk 2; a post-processor appends </s> like T5's tokenizer). The task: the input is a
"pick:" prompt and 6-12 words, the target is every other word mapped to its partner word, so
labels are about half as long as input_ids. Preprocessing follows the HF summarization
example: labels tokenized with padding="max_length", pad ids replaced by -100
(ignore_pad_token_for_loss); DataCollatorForSeq2Seq builds decoder_input_ids from the labels.
Evaluation runs with predict_with_generate and reports exact_match and gen_len.

Besides what the Trainer writes (checkpoint-N/, runs/<date>/), the first training batch is
dumped as batch.safetensors (input_ids, attention_mask, labels, decoder_input_ids), the way
the other corpus runs dump a batch."""
import os
import random
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402
from transformers import (DataCollatorForSeq2Seq, PreTrainedTokenizerFast,  # noqa: E402
                          Seq2SeqTrainer, Seq2SeqTrainingArguments, T5Config,
                          T5ForConditionalGeneration)

from common import record, run_dir, versions  # noqa: E402

N_WORDS = 40
MAX_SRC, MAX_TGT = 16, 8


def tokenizer():
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, "pick:": 3}
    for i in range(N_WORDS):
        vocab[f"x{i}"] = len(vocab)
    for i in range(N_WORDS):
        vocab[f"y{i}"] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                     special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>", model_max_length=MAX_SRC)


def examples(n, seed):
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(n):
        ids = [rng.randrange(N_WORDS) for _ in range(rng.randint(6, 12))]
        src.append("pick: " + " ".join(f"x{i}" for i in ids))
        tgt.append(" ".join(f"y{(i * 7 + 3) % N_WORDS}" for i in ids[::2]))
    return Dataset.from_dict({"source": src, "target": tgt})


def train(name, pad_labels_masked=True, target_eos=True):
    out = run_dir(name)
    tok = tokenizer()
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=32, d_kv=16, d_ff=64, num_layers=2,
                   num_decoder_layers=2, num_heads=2, dropout_rate=0.0, pad_token_id=0,
                   eos_token_id=1, decoder_start_token_id=0, feed_forward_proj="relu")
    model = T5ForConditionalGeneration(cfg)
    model.generation_config.max_length = MAX_TGT + 2

    def preprocess(batch):
        enc = tok(batch["source"], max_length=MAX_SRC, truncation=True)
        lab = tok(text_target=batch["target"], max_length=MAX_TGT, padding="max_length",
                  truncation=True, add_special_tokens=target_eos)
        ids = lab["input_ids"]
        if pad_labels_masked:  # ignore_pad_token_for_loss
            ids = [[t if t != tok.pad_token_id else -100 for t in row] for row in ids]
        enc["labels"] = ids
        return enc

    train_ds = examples(2048, 1).map(preprocess, batched=True, remove_columns=["source", "target"])
    eval_ds = examples(128, 2).map(preprocess, batched=True, remove_columns=["source", "target"])
    collator = DataCollatorForSeq2Seq(tok, model=model, label_pad_token_id=-100)

    def compute_metrics(p):
        preds, labels = p
        preds = np.where(preds != -100, preds, tok.pad_token_id)
        labels = np.where(labels != -100, labels, tok.pad_token_id)
        dp = tok.batch_decode(preds, skip_special_tokens=True)
        dl = tok.batch_decode(labels, skip_special_tokens=True)
        gen_len = np.mean([np.count_nonzero(row != tok.pad_token_id) for row in preds])
        return {"exact_match": float(np.mean([a.strip() == b.strip() for a, b in zip(dp, dl)])),
                "gen_len": float(gen_len)}

    args = Seq2SeqTrainingArguments(
        output_dir=str(out), num_train_epochs=15, per_device_train_batch_size=32,
        per_device_eval_batch_size=64, learning_rate=5e-3, warmup_steps=40,
        lr_scheduler_type="linear", weight_decay=0.01, logging_steps=20, eval_strategy="steps",
        eval_steps=160, save_strategy="steps", save_steps=480, save_total_limit=2,
        predict_with_generate=True, generation_max_length=MAX_TGT + 2, report_to=["tensorboard"],
        seed=0, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
                             data_collator=collator, processing_class=tok,
                             compute_metrics=compute_metrics)
    b = next(iter(trainer.get_train_dataloader()))
    save_file({k: v.contiguous() for k, v in b.items()}, str(out / "batch.safetensors"))
    trainer.train()


RUNS = {
    "seq2seq_t5_healthy": (dict(), None, [], {}),
    "seq2seq_t5_pad_in_labels": (
        dict(pad_labels_masked=False),
        "labels padded to max_length=8 with the pad id (0) and not replaced by -100 "
        "(ignore_pad_token_for_loss off): pad positions count in the loss, which the easy pad "
        "targets dilute (final train loss 0.012 vs the healthy 0.020) while exact_match ends "
        "lower (0.88 vs 0.96); in batch.safetensors labels hold 0 where attention ends",
        ["O15", "L2"], {}),
    "seq2seq_t5_labels_no_eos": (
        dict(target_eos=False),
        "targets tokenized with add_special_tokens=False: no </s> in any label row, so the "
        "model never learns to stop; every generation runs to generation_max_length (eval gen_len "
        "9 at every eval vs the healthy 5.6) and exact_match stays 0 while eval_loss falls to "
        "0.07",
        ["G1"], {}),
}

if __name__ == "__main__":
    made = versions("torch", "transformers")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts,
               profile={"framework": "transformers", "resumed_at": None,
                        "init_checkpoint": False})
