"""HF Trainer runs: causal LM (GPT-2 / Llama configs) and sequence classification (BERT /
GPT-2 / Llama heads), from scratch, from a local pretrained base, as a PEFT LoRA adapter, and
resumed with `resume_from_checkpoint` after a stop (preemption / time limit)."""
import contextlib
import io
import os

import torch
from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification, BertConfig,
                          BertForSequenceClassification, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback,
                          TrainingArguments, default_data_collator)

from sw_common import NS, VT, classes, markov, tokenizer

BASES = {"gpt2": "_bases/tiny-gpt2-markov", "llama": "_bases/tiny-llama-markov"}


class LMRows(torch.utils.data.Dataset):
    def __init__(self, x):
        self.x = x

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        ids = self.x[i]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


class ClsRows(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        ids = self.x[i]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": self.y[i]}


def scratch_lm(arch, n_embd=24, n_layer=2, seq=32):
    if arch == "gpt2":
        cfg = GPT2Config(n_layer=n_layer, n_head=2, n_embd=n_embd, vocab_size=VT, n_positions=64,
                         bos_token_id=2, eos_token_id=1, pad_token_id=0)
        return GPT2LMHeadModel(cfg)
    cfg = LlamaConfig(hidden_size=n_embd, intermediate_size=2 * n_embd, num_hidden_layers=n_layer,
                      num_attention_heads=2, num_key_value_heads=1, vocab_size=VT,
                      max_position_embeddings=64, tie_word_embeddings=True, bos_token_id=2,
                      eos_token_id=1, pad_token_id=0)
    return LlamaForCausalLM(cfg)


def scratch_cls(n_cls, n_embd=32):
    cfg = BertConfig(hidden_size=n_embd, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=2 * n_embd, vocab_size=VT, max_position_embeddings=64,
                     num_labels=n_cls, pad_token_id=0, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    return BertForSequenceClassification(cfg)


class SaveInitCallback(TrainerCallback):
    """The weights before the first update, saved the way users add it to a Trainer."""

    def on_train_begin(self, args, state, control, model=None, **kw):
        if state.global_step == 0:
            model.save_pretrained(os.path.join(args.output_dir, "checkpoint-0"))


class StopAt(TrainerCallback):
    """Ends the first job at a step (a SLURM time limit / preemption, without a save)."""

    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kw):
        if state.global_step >= self.step:
            control.should_training_stop = True


def lora_wrap(model, task, arch):
    from peft import LoraConfig, get_peft_model

    targets = ["c_attn", "c_proj", "c_fc"] if arch == "gpt2" else \
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    kw = dict(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=targets, task_type=task)
    if task == "SEQ_CLS":
        kw["modules_to_save"] = ["score"]
    return get_peft_model(model, LoraConfig(**kw))


def run(out, spec):
    """Build and train one HF Trainer run as `spec` says. Returns the log history."""
    s = dict(steps=300, log=10, sched="cosine", warmup=None, lr=None, optim="adamw", bf16=False,
             accum=1, bs=16, save=None, save_limit=None, init0=False, first_step=False,
             eval=False, stdout=False, stop_at=None, resume_from=None, n_embd=24, n_layer=2,
             seq=32, wd=0.01, report="tensorboard", n_cls=2, power=2.0, order=1)
    s.update(spec)
    task, init, arch = s["task"], s["init"], s["arch"]
    torch.manual_seed(s["seed"])
    if task == "lm":
        if init == "scratch":
            model = scratch_lm(arch, s["n_embd"], s["n_layer"])
        else:
            model = AutoModelForCausalLM.from_pretrained(BASES[arch])
            if init == "adapter":
                model = lora_wrap(model, "CAUSAL_LM", arch)
        chain = 0 if init == "scratch" else 1
        n = s["steps"] * s["bs"] * s["accum"]
        train = LMRows(markov(n, s["seq"], seed=s["seed"], chain=chain, offset=NS, order=s["order"]))
        evald = LMRows(markov(64, s["seq"], seed=s["seed"] + 1, chain=chain, offset=NS,
                                  order=s["order"]))
        metrics = None
    else:
        if init == "scratch":
            model = scratch_cls(s["n_cls"], s.get("cls_embd", 32))
        else:
            model = AutoModelForSequenceClassification.from_pretrained(BASES[arch],
                                                                       num_labels=s["n_cls"])
            model.config.pad_token_id = 0
            if init == "adapter":
                model = lora_wrap(model, "SEQ_CLS", arch)
        n = s["steps"] * s["bs"] * s["accum"]
        train = ClsRows(*classes(n, s["seq"], s["n_cls"], seed=s["seed"], offset=NS))
        evald = ClsRows(*classes(128, s["seq"], s["n_cls"], seed=s["seed"] + 1, offset=NS))

        def metrics(p):
            return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}

    lr = s["lr"] or {"scratch": 3e-3, "pretrained": 5e-4, "adapter": 3e-3}[init]
    if s["sched"] == "constant":
        warmup = 0
    else:
        warmup = s["warmup"] if s["warmup"] is not None else max(1, s["steps"] // 10)
    kw = dict(output_dir=str(out), max_steps=s["steps"], learning_rate=lr, warmup_steps=warmup,
              lr_scheduler_type=s["sched"], weight_decay=s["wd"],
              per_device_train_batch_size=s["bs"], per_device_eval_batch_size=32,
              gradient_accumulation_steps=s["accum"], logging_steps=s["log"],
              logging_first_step=s["first_step"], save_steps=s["save"] or 500,
              save_total_limit=s["save_limit"], bf16=s["bf16"], report_to=[] if s["report"] == "none"
              else [s["report"]], use_cpu=True, seed=s["seed"], dataloader_num_workers=0,
              disable_tqdm=True)
    if s["sched"] == "polynomial":
        kw["lr_scheduler_kwargs"] = {"power": s["power"], "lr_end": lr * 0.01}
    if s["eval"]:
        kw.update(eval_strategy="steps", eval_steps=s["eval"])
    opt = s["optim"]
    optimizers = (None, None)
    if opt == "adafactor":
        kw["optim"] = "adafactor"
    elif opt == "sgd":
        kw.update(optim="sgd", optim_args="momentum=0.9,nesterov=True")
    elif opt == "adamw_one_group":  # passed in by the user: one group, decay on everything
        optimizers = (torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01), None)
    else:
        kw["optim"] = "adamw_torch"
    callbacks = []
    if s["init0"]:
        callbacks.append(SaveInitCallback())
    tok = tokenizer()

    def trainer(extra_cb=()):
        return Trainer(model=model, args=TrainingArguments(**kw), train_dataset=train,
                       eval_dataset=evald if s["eval"] else None,
                       data_collator=default_data_collator, processing_class=tok,
                       compute_metrics=metrics, callbacks=callbacks + list(extra_cb),
                       optimizers=optimizers)

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf) if s["stdout"] else contextlib.nullcontext():
        if s["stop_at"]:
            trainer([StopAt(s["stop_at"])]).train()
            # the second job: a fresh process rebuilds everything and resumes
            torch.manual_seed(s["seed"])
            if opt == "adamw_one_group":
                optimizers = (torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01), None)
            if s["init0"]:
                callbacks.clear()
            tr = trainer()
            tr.train(resume_from_checkpoint=os.path.join(out, f"checkpoint-{s['resume_from']}"))
        else:
            tr = trainer()
            tr.train()
    if s["stdout"]:
        (out / "train.log").write_text(buf.getvalue())
    if s.get("save_final"):
        tr.save_model(str(out / "final"))
    return tr.state.log_history


def losses(history):
    return [(h["step"], h["loss"]) for h in history if "loss" in h]
