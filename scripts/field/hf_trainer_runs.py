"""HF Trainer runs: a tiny GPT-2 trained from scratch with Trainer (TensorBoard reporting,
warmup + cosine, checkpoint-N folders), the same with `optim="adafactor"` (healthy, and at a
100x learning rate: the loss overshoots, recovers and parks near ln V), and a PEFT LoRA fine-tune
of the first."""
import sys

import torch
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          default_data_collator)

from common import OUT, VOCAB, markov, record, run_dir, versions


class Rows(torch.utils.data.Dataset):
    def __init__(self, x, mask_all=False):
        self.x, self.mask_all = x, mask_all

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        ids = self.x[i]
        labels = ids.clone()
        if self.mask_all:  # the bug: a prompt mask computed past the end masks every token
            labels[:] = -100
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def args(out, lr=3e-3, steps=300, **kw):
    return TrainingArguments(
        output_dir=str(out), max_steps=steps, learning_rate=lr, warmup_steps=30,
        lr_scheduler_type="cosine", weight_decay=0.1, per_device_train_batch_size=16,
        per_device_eval_batch_size=16, logging_steps=10, eval_strategy="steps", eval_steps=100,
        save_steps=150, report_to=["tensorboard"], use_cpu=True, seed=0,
        dataloader_num_workers=0, **kw)


def plain(name, lr=3e-3, mask_all=False, **kw):
    out = run_dir(name)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=32,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg)
    tr = Trainer(model=model, args=args(out, lr, **kw), data_collator=default_data_collator,
                 train_dataset=Rows(markov(16 * 300, 32, seed=1), mask_all),
                 eval_dataset=Rows(markov(64, 32, seed=2), mask_all))
    tr.train()
    return out


def lora(name, base, freeze_all=False):
    from peft import LoraConfig, get_peft_model

    out = run_dir(name)
    torch.manual_seed(0)
    model = GPT2LMHeadModel.from_pretrained(base)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_proj"],
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    if freeze_all:  # "freeze the base model", then "keep the head trainable": LoRA frozen too
        model.requires_grad_(False)
        model.base_model.model.lm_head.weight.requires_grad_(True)
    model.print_trainable_parameters()
    # a shifted language: the successor table of a different seed
    data = markov(16 * 200, 32, seed=11)
    tr = Trainer(model=model, args=args(out, 1e-3, 200), data_collator=default_data_collator,
                 train_dataset=Rows(data), eval_dataset=Rows(markov(64, 32, seed=12)))
    tr.train()
    return out


RUNS = ["hf_healthy", "hf_lr_100x", "hf_labels_all_masked", "hf_adafactor_healthy",
        "hf_adafactor_lr_100x", "peft_lora_healthy", "peft_lora_frozen_adapters"]

if __name__ == "__main__":
    want = sys.argv[1:] or RUNS
    made = versions("torch", "transformers")
    if "hf_healthy" in want:
        plain("hf_healthy")
        record("hf_healthy", made, None, [])
    if "hf_lr_100x" in want:
        plain("hf_lr_100x", lr=0.3)
        record("hf_lr_100x", made, "learning_rate 0.3, 100x the healthy 3e-3",
               ["S3.1", "S3.2", "S4.1", "S1.2", "O22"], {"lr_max": "0.003"})
    if "hf_labels_all_masked" in want:
        plain("hf_labels_all_masked", mask_all=True)
        record("hf_labels_all_masked", made, "every label -100: no token is scored",
               ["L2", "O15", "L7"])
    if "hf_adafactor_healthy" in want:
        plain("hf_adafactor_healthy", optim="adafactor")
        record("hf_adafactor_healthy", made, None, [])
    if "hf_adafactor_lr_100x" in want:
        plain("hf_adafactor_lr_100x", lr=0.3, optim="adafactor")
        record("hf_adafactor_lr_100x", made,
               "optim='adafactor' at learning_rate 0.3, 100x the healthy 3e-3: the loss first climbs "
               "from 4.2 to 5.4 (step 40), then falls back and parks at 3.9, just under ln 64 = 4.16 "
               "(the healthy run ends at 1.6)",
               ["S2.2", "S4.1", "O22", "S3.1", "S1.2"], {"lr_max": "0.003"})
    base = OUT / "hf_healthy" / "checkpoint-300"
    madep = versions("torch", "transformers", "peft")
    if "peft_lora_healthy" in want:
        lora("peft_lora_healthy", base)
        record("peft_lora_healthy", madep, None, [])
    if "peft_lora_frozen_adapters" in want:
        lora("peft_lora_frozen_adapters", base, freeze_all=True)
        record("peft_lora_frozen_adapters", madep,
               "model.requires_grad_(False) after get_peft_model: LoRA A/B frozen, only the head trains",
               ["O21"])
