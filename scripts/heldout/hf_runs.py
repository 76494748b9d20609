"""Healthy runs made with the Hugging Face Trainer (transformers)."""
import os
import shutil
import tempfile

import numpy as np
import torch
import transformers
from datasets import Dataset
from transformers import (
    AutoModelForCausalLM,
    BertConfig,
    BertForMaskedLM,
    BertForTokenClassification,
    DataCollatorForLanguageModeling,
    DistilBertConfig,
    DistilBertForSequenceClassification,
    GPT2Config,
    GPT2ForSequenceClassification,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    RobertaConfig,
    RobertaForSequenceClassification,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    default_data_collator,
)

from common import MarkovText, assert_learned, char_tokenizer, entry, seed_all, versions, vocab_size

MADE_BY = None
SEQ = 48


def made_by():
    return versions("transformers")


def lm_dataset(tok, n, seed, seq=SEQ, chars="abcdefghijklmnop ", chain=0):
    mk = MarkovText(seed=chain, chars=chars)
    mk.rng = np.random.default_rng(seed + 100)
    texts = [mk.sample(seq - 2) for _ in range(n)]
    enc = tok(texts, max_length=seq, truncation=True, padding="max_length")
    ds = Dataset.from_dict({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]})
    return ds.map(lambda b: {"labels": [[t if m else -100 for t, m in zip(ids, am)] for ids, am in zip(b["input_ids"], b["attention_mask"])]}, batched=True)


def small(cfg_cls, **kw):
    base = dict(vocab_size=vocab_size(), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                pad_token_id=0, bos_token_id=2, eos_token_id=3)
    base.update(kw)
    return cfg_cls(**base)


def args(out, **kw):
    base = dict(output_dir=out, per_device_train_batch_size=16, per_device_eval_batch_size=32,
                learning_rate=5e-3, logging_steps=5, save_strategy="no", report_to="tensorboard",
                use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True)
    base.update(kw)
    return TrainingArguments(**base)


def prec(t):
    return "bf16" if t.args.bf16 else "fp16" if t.args.fp16 else "fp32"


def losses(trainer):
    return [h["loss"] for h in trainer.state.log_history if "loss" in h]


def finish(trainer, train_result, save_state=True):
    trainer.save_model()
    metrics = train_result.metrics
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    if save_state:
        trainer.save_state()


# ----------------------------------------------------------------------------
def run_mistral_cosine_restarts(out):
    seed_all(1)
    tok = char_tokenizer()
    model = MistralForCausalLM(small(MistralConfig, sliding_window=32))
    tr, ev = lm_dataset(tok, 800, 1), lm_dataset(tok, 64, 2)
    a = args(out, max_steps=120, lr_scheduler_type="cosine_with_restarts", lr_scheduler_kwargs={"num_cycles": 2},
             warmup_steps=0.1, logging_first_step=True, eval_strategy="steps", eval_steps=20,
             save_strategy="steps", save_steps=40, save_total_limit=1)
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, processing_class=tok)
    r = t.train()
    finish(t, r)
    m = t.evaluate()
    t.log_metrics("eval", m)
    t.save_metrics("eval", m)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=5, optimizer="adamw",
                 schedule="cosine_with_restarts", accum_steps=1)


def run_qwen2_gc_inverse_sqrt(out):
    seed_all(2)
    tok = char_tokenizer()
    model = Qwen2ForCausalLM(small(Qwen2Config, tie_word_embeddings=True, use_cache=False))
    tr = lm_dataset(tok, 800, 3)
    a = args(out, max_steps=100, lr_scheduler_type="inverse_sqrt", warmup_steps=10, gradient_checkpointing=True,
             logging_steps=2, gradient_accumulation_steps=2,
             per_device_train_batch_size=8)
    t = Trainer(model=model, args=a, train_dataset=tr, processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=2, optimizer="adamw",
                 schedule="inverse_sqrt", accum_steps=2)


def run_llama_sgd_constant_warmup(out):
    seed_all(3)
    tok = char_tokenizer()
    model = LlamaForCausalLM(small(LlamaConfig))
    tr, ev = lm_dataset(tok, 1200, 4), lm_dataset(tok, 64, 5)
    a = args(out, max_steps=150, optim="sgd", learning_rate=0.5, lr_scheduler_type="constant_with_warmup",
             warmup_steps=15, logging_steps=10, eval_strategy="steps", eval_steps=50, report_to="none")
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=10, optimizer="sgd",
                 schedule="constant_with_warmup", accum_steps=1)


def run_llama_best_at_end_label_smoothing(out):
    seed_all(4)
    tok = char_tokenizer()
    model = LlamaForCausalLM(small(LlamaConfig, intermediate_size=48))
    tr, ev = lm_dataset(tok, 800, 6), lm_dataset(tok, 64, 7)
    a = args(out, num_train_epochs=2, lr_scheduler_type="cosine", warmup_steps=0.05, label_smoothing_factor=0.1,
             eval_strategy="steps", eval_steps=25, save_strategy="steps", save_steps=25, save_total_limit=1,
             load_best_model_at_end=True, metric_for_best_model="eval_loss", greater_is_better=False,
             logging_first_step=True, weight_decay=0.1, optim="adamw_torch")
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=5, optimizer="adamw",
                 schedule="cosine", accum_steps=1)


def run_gpt2_bf16_linear(out):
    seed_all(5)
    tok = char_tokenizer()
    from transformers import GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size(), n_embd=16, n_layer=2, n_head=2, n_positions=48,
                                       bos_token_id=2, eos_token_id=3, pad_token_id=0))
    tr = lm_dataset(tok, 800, 8)
    a = args(out, max_steps=100, bf16=True, lr_scheduler_type="linear", warmup_steps=5, logging_steps=4,
             max_grad_norm=0.5)
    t = Trainer(model=model, args=a, train_dataset=tr, processing_class=tok)
    r = t.train()
    finish(t, r, save_state=False)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=4,
                 optimizer="adamw", schedule="linear", accum_steps=1)


def run_bert_mlm(out):
    seed_all(6)
    tok = char_tokenizer()
    tok.mask_token = "<unk>"
    model = BertForMaskedLM(BertConfig(vocab_size=vocab_size(), hidden_size=16, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=32, max_position_embeddings=48,
                                       pad_token_id=0))
    ds = lm_dataset(tok, 1000, 9).remove_columns(["labels"])
    coll = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=0.2)
    a = args(out, max_steps=120, logging_steps=5, lr_scheduler_type="linear", warmup_steps=0.1)
    t = Trainer(model=model, args=a, train_dataset=ds, data_collator=coll, processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", precision=prec(t), log_interval=5, optimizer="adamw",
                 schedule="linear", accum_steps=1)


# ---------------------------------------------------------------- classification
CATS = {c: (0 if c in "aeiou" else 1 if c.isalpha() else 2 if c.isdigit() else 3 if c == " " else 4)
        for c in "abcdefghijklmnopqrstuvwxyz .,?!0123456789"}


def tokcls_dataset(tok, n, seed, seq=32):
    rng = np.random.default_rng(seed)
    chars = list(CATS)
    ids, labs, am = [], [], []
    for _ in range(n):
        s = "".join(rng.choice(chars, seq - 2))
        enc = tok(s, max_length=seq, padding="max_length", truncation=True)
        lab = [CATS[c] for c in s]
        lab = (lab + [-100] * seq)[:seq]
        lab = [l if m else -100 for l, m in zip(lab, enc["attention_mask"])]
        ids.append(enc["input_ids"]); am.append(enc["attention_mask"]); labs.append(lab)
    return Dataset.from_dict({"input_ids": ids, "attention_mask": am, "labels": labs})


def run_bert_token_classification(out):
    seed_all(7)
    tok = char_tokenizer()
    labels = ["VOWEL", "CONS", "DIGIT", "SPACE", "PUNCT"]
    cfg = BertConfig(vocab_size=vocab_size(), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32, pad_token_id=0, num_labels=5,
                     id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model = BertForTokenClassification(cfg)
    tr, ev = tokcls_dataset(tok, 1000, 1), tokcls_dataset(tok, 100, 2)

    def metrics(p):
        pred = p.predictions.argmax(-1)
        mask = p.label_ids != -100
        return {"accuracy": float((pred[mask] == p.label_ids[mask]).mean())}

    a = args(out, num_train_epochs=3, learning_rate=3e-3, eval_strategy="epoch", logging_steps=10, lr_scheduler_type="linear", warmup_steps=0.1)
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, compute_metrics=metrics,
                processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "classification", "scratch", "hf_trainer", precision=prec(t), log_interval=10, optimizer="adamw",
                 schedule="linear", accum_steps=1)


CHAINS = [MarkovText(seed=s, chars="abcdefgh ") for s in range(10, 15)]


def seqcls_dataset(tok, n, seed, k, seq=40):
    rng = np.random.default_rng(seed)
    ids, am, labs = [], [], []
    for _ in range(n):
        y = int(rng.integers(k))
        mk = CHAINS[y]
        mk.rng = np.random.default_rng(int(rng.integers(1 << 30)))
        s = mk.sample(seq - 2)
        enc = tok(s, max_length=seq, padding="max_length", truncation=True)
        ids.append(enc["input_ids"]); am.append(enc["attention_mask"]); labs.append(y)
    return Dataset.from_dict({"input_ids": ids, "attention_mask": am, "labels": labs})


def acc_metric(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}


def run_roberta_seqcls_3(out):
    seed_all(8)
    tok = char_tokenizer()
    cfg = RobertaConfig(vocab_size=vocab_size(), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=44, pad_token_id=0, bos_token_id=2,
                        eos_token_id=3, num_labels=3, type_vocab_size=1)
    model = RobertaForSequenceClassification(cfg)
    tr, ev = seqcls_dataset(tok, 900, 1, 3), seqcls_dataset(tok, 90, 2, 3)
    a = args(out, num_train_epochs=3, learning_rate=3e-3, eval_strategy="steps", eval_steps=40,
             logging_steps=10, logging_first_step=True, lr_scheduler_type="cosine", warmup_steps=0.1)
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, compute_metrics=acc_metric,
                processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "classification", "scratch", "hf_trainer", precision=prec(t), log_interval=10, optimizer="adamw",
                 schedule="cosine", accum_steps=1)


def run_distilbert_seqcls_4_smoothing(out):
    seed_all(9)
    tok = char_tokenizer()
    cfg = DistilBertConfig(vocab_size=vocab_size(), dim=16, hidden_dim=32, n_layers=2, n_heads=2,
                           max_position_embeddings=40, pad_token_id=0, num_labels=4)
    model = DistilBertForSequenceClassification(cfg)
    tr, ev = seqcls_dataset(tok, 900, 3, 4), seqcls_dataset(tok, 90, 4, 4)
    a = args(out, num_train_epochs=6, learning_rate=3e-3, label_smoothing_factor=0.1, eval_strategy="epoch",
             logging_strategy="epoch", save_strategy="epoch", save_total_limit=1,
             lr_scheduler_type="linear", report_to="none")
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, compute_metrics=acc_metric,
                processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "classification", "scratch", "hf_trainer", precision=prec(t), log_interval=None, optimizer="adamw",
                 schedule="linear", accum_steps=1)


def run_gpt2_seqcls_5(out):
    seed_all(10)
    tok = char_tokenizer()
    cfg = GPT2Config(vocab_size=vocab_size(), n_embd=16, n_layer=2, n_head=2, n_positions=40, num_labels=5,
                     pad_token_id=0, bos_token_id=2, eos_token_id=3)
    model = GPT2ForSequenceClassification(cfg)
    tr, ev = seqcls_dataset(tok, 1000, 5, 5), seqcls_dataset(tok, 100, 6, 5)
    a = args(out, max_steps=150, learning_rate=4e-3, eval_strategy="steps", eval_steps=50, logging_steps=5,
             lr_scheduler_type="constant_with_warmup", warmup_steps=10, optim="adamw_torch",
             save_strategy="steps", save_steps=50, save_total_limit=1, load_best_model_at_end=True,
             metric_for_best_model="accuracy")
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, compute_metrics=acc_metric,
                processing_class=tok)
    r = t.train()
    finish(t, r)
    assert_learned(out, losses(t))
    return entry(made_by(), "classification", "scratch", "hf_trainer", precision=prec(t), log_interval=5, optimizer="adamw",
                 schedule="constant_with_warmup", accum_steps=1)


# ---------------------------------------------------------------- fine-tunes
def train_base(path, seed=20):
    """Pretrain a tiny Llama on a mixture of chains 0-7 and save_pretrained it locally."""
    seed_all(seed)
    tok = char_tokenizer(chat=True)
    model = LlamaForCausalLM(small(LlamaConfig, intermediate_size=48))
    from datasets import concatenate_datasets
    tr = concatenate_datasets([lm_dataset(tok, 250, 50 + c, chars="abcdefghijklmnopqrstuvwxyz ", chain=c)
                               for c in range(8)]).shuffle(seed=0)
    a = args(os.path.join(path, "_trainer"), max_steps=300, report_to="none", logging_steps=50)
    t = Trainer(model=model, args=a, train_dataset=tr)
    t.train()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    shutil.rmtree(os.path.join(path, "_trainer"), ignore_errors=True)
    return path


def run_llama_finetune_local_base(out, base):
    seed_all(11)
    tok = transformers.AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    tr, ev = lm_dataset(tok, 600, 31, chars="abcdefghijklmnopqrstuvwxyz ", chain=1), lm_dataset(tok, 64, 32, chars="abcdefghijklmnopqrstuvwxyz ", chain=1)
    a = args(out, num_train_epochs=1, learning_rate=1e-3, lr_scheduler_type="cosine", warmup_steps=0.1,
             logging_steps=2, eval_strategy="steps", eval_steps=10)
    t = Trainer(model=model, args=a, train_dataset=tr, eval_dataset=ev, processing_class=tok)
    r = t.train()
    finish(t, r)
    return entry(made_by(), "pretrain", "pretrained", "hf_trainer", precision=prec(t), log_interval=2, optimizer="adamw",
                 schedule="cosine", accum_steps=1)


def run_llama_lora_local_base(out, base):
    seed_all(12)
    import peft
    tok = transformers.AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    model = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                       lora_dropout=0.0, task_type="CAUSAL_LM"))
    tr = lm_dataset(tok, 600, 33, chars="abcdefghijklmnopqrstuvwxyz ", chain=1)
    a = args(out, max_steps=60, learning_rate=5e-3, lr_scheduler_type="linear", warmup_steps=6,
             logging_steps=3, save_strategy="steps", save_steps=30, save_total_limit=1)
    t = Trainer(model=model, args=a, train_dataset=tr, processing_class=tok)
    r = t.train()
    finish(t, r)
    return entry(versions("transformers", "peft"), "pretrain", "adapter", "hf_trainer", precision=prec(t), log_interval=3,
                 optimizer="adamw", schedule="linear", accum_steps=1)


class Preempt(TrainerCallback):
    def __init__(self, at):
        self.at = at

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.at:
            raise KeyboardInterrupt("simulated preemption")


def run_mistral_resume(out):
    seed_all(13)
    tok = char_tokenizer()
    tr, ev = lm_dataset(tok, 1000, 40), lm_dataset(tok, 64, 41)

    def mk():
        return args(out, max_steps=120, lr_scheduler_type="cosine", warmup_steps=10, logging_steps=5,
                    eval_strategy="steps", eval_steps=30, save_strategy="steps", save_steps=30, save_total_limit=1)

    t = Trainer(model=MistralForCausalLM(small(MistralConfig)), args=mk(), train_dataset=tr, eval_dataset=ev,
                processing_class=tok, callbacks=[Preempt(72)])
    try:
        t.train()
    except KeyboardInterrupt:
        pass
    # a new job: fresh model object, resume from the latest checkpoint (checkpoint-60)
    seed_all(13)
    t2 = Trainer(model=MistralForCausalLM(small(MistralConfig)), args=mk(), train_dataset=tr, eval_dataset=ev,
                 processing_class=tok)
    r = t2.train(resume_from_checkpoint=True)
    finish(t2, r)
    assert_learned(out, losses(t2))
    return entry(made_by(), "pretrain", "scratch", "hf_trainer", resumed_at=60, precision=prec(t2), log_interval=5,
                 optimizer="adamw", schedule="cosine", accum_steps=1)


RUNS = [
    ("hf_mistral_cosine_restarts_eval", run_mistral_cosine_restarts),
    ("hf_qwen2_gradckpt_inverse_sqrt_accum2", run_qwen2_gc_inverse_sqrt),
    ("hf_llama_sgd_constant_warmup", run_llama_sgd_constant_warmup),
    ("hf_llama_best_at_end_label_smoothing", run_llama_best_at_end_label_smoothing),
    ("hf_gpt2_bf16_linear", run_gpt2_bf16_linear),
    ("hf_bert_mlm_scratch", run_bert_mlm),
    ("hf_bert_token_cls_5labels", run_bert_token_classification),
    ("hf_roberta_seq_cls_3labels", run_roberta_seqcls_3),
    ("hf_distilbert_seq_cls_4labels_epoch_logging", run_distilbert_seqcls_4_smoothing),
    ("hf_gpt2_seq_cls_5labels_best_acc", run_gpt2_seqcls_5),
    ("hf_mistral_resume_from_checkpoint", run_mistral_resume),
]
BASE_RUNS = [
    ("hf_llama_finetune_local_base", run_llama_finetune_local_base),
    ("hf_llama_lora_local_base", run_llama_lora_local_base),
]


def main(out_dir, only=None):
    answers = {}
    for name, fn in RUNS:
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        answers[name] = fn(d)
        print("done", name, flush=True)
    if not only or any(n in only for n, _ in BASE_RUNS):
        tmp = tempfile.mkdtemp(prefix="heldout_base_")
        try:
            base = train_base(os.path.join(tmp, "tiny-llama-base"))
            for name, fn in BASE_RUNS:
                if only and name not in only:
                    continue
                d = os.path.join(out_dir, name)
                shutil.rmtree(d, ignore_errors=True)
                answers[name] = fn(d, base)
                print("done", name, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return answers
