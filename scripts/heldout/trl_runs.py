"""Healthy post-training runs made with TRL on a tiny Llama that is first
pretrained locally (hf_runs.train_base) and saved with save_pretrained."""
import os
import shutil
import tempfile

import numpy as np
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from common import MarkovText, assert_learned, entry, seed_all, versions
import hf_runs

ALPH = "abcdefghijklmnopqrstuvwxyz "


def made_by():
    return versions("transformers", "trl")


def common_kw(out, **kw):
    base = dict(output_dir=out, per_device_train_batch_size=8, learning_rate=2e-3, logging_steps=2,
                save_strategy="no", report_to="tensorboard", use_cpu=True, seed=0, disable_tqdm=True,
                dataloader_num_workers=0)
    base.update(kw)
    return base


def chain_texts(n, seed, lo=8, hi=40, chain=1):
    mk = MarkovText(seed=chain, chars=ALPH)
    mk.rng = np.random.default_rng(seed)
    return [mk.sample(int(mk.rng.integers(lo, hi))) for _ in range(n)]


def losses(t):
    return [h["loss"] for h in t.state.log_history if "loss" in h]


def load(base):
    return AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)


def prec(t):
    # TRL's configs default bf16=True (mixed precision, CPU autocast here)
    return "bf16" if t.args.bf16 else "fp16" if t.args.fp16 else "fp32"


def finish(t):
    t.save_model()
    t.save_state()


# ---------------------------------------------------------------- SFT
def run_sft_packing(out, base):
    from trl import SFTConfig, SFTTrainer
    seed_all(21)
    model, tok = load(base)
    ds = Dataset.from_dict({"text": chain_texts(600, 1, chain=5)})
    cfg = SFTConfig(**common_kw(out, max_steps=60, packing=True, max_length=64, lr_scheduler_type="cosine",
                                warmup_steps=0.1, logging_first_step=True))
    t = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
    t.train()
    finish(t)
    assert_learned(out, losses(t), ratio=0.95)
    return entry(made_by(), "sft", "pretrained", "trl", precision=prec(t), log_interval=2, optimizer="adamw", schedule="cosine",
                 accum_steps=1)


def messages_ds(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    qs = chain_texts(n, seed, 4, 12, chain=2)
    ans = chain_texts(n, seed + 1, 6, 16, chain=6)
    for q, a in zip(qs, ans):
        msgs = [{"role": "user", "content": "say " + q.strip()}, {"role": "assistant", "content": "ok " + a.strip()}]
        if rng.random() < 0.3:
            msgs.insert(0, {"role": "system", "content": "be brief"})
        rows.append(msgs)
    return Dataset.from_dict({"messages": rows})


def run_sft_messages(out, base):
    from trl import SFTConfig, SFTTrainer
    seed_all(22)
    model, tok = load(base)
    tr, ev = messages_ds(500, 1), messages_ds(48, 2)
    cfg = SFTConfig(**common_kw(out, num_train_epochs=1, max_length=64, assistant_only_loss=True,
                                lr_scheduler_type="linear", warmup_steps=5, eval_strategy="steps", eval_steps=15,
                                per_device_eval_batch_size=16))
    t = SFTTrainer(model=model, args=cfg, train_dataset=tr, eval_dataset=ev, processing_class=tok)
    t.train()
    finish(t)
    assert_learned(out, losses(t), ratio=0.9)
    return entry(made_by(), "sft", "pretrained", "trl", precision=prec(t), log_interval=2, optimizer="adamw", schedule="linear",
                 accum_steps=1)


def run_sft_lora(out, base):
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer
    seed_all(23)
    model, tok = load(base)
    tr = messages_ds(400, 3)
    cfg = SFTConfig(**common_kw(out, max_steps=50, max_length=64, learning_rate=8e-3, gradient_accumulation_steps=2,
                                per_device_train_batch_size=4, lr_scheduler_type="constant", report_to="none",
                                logging_steps=5, save_strategy="steps", save_steps=25, save_total_limit=1))
    peft_cfg = LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                          lora_dropout=0.0, task_type="CAUSAL_LM")
    t = SFTTrainer(model=model, args=cfg, train_dataset=tr, processing_class=tok, peft_config=peft_cfg)
    t.train()
    finish(t)
    return entry(versions("transformers", "trl", "peft"), "sft", "adapter", "trl", precision=prec(t), log_interval=5,
                 optimizer="adamw", schedule="constant", accum_steps=2)


# ---------------------------------------------------------------- preferences
def pref_ds(n, seed):
    rng = np.random.default_rng(seed)
    prompts = chain_texts(n, seed, 6, 14, chain=1)
    good = chain_texts(n, seed + 7, 6, 10, chain=1)
    bad = ["".join(rng.choice(list(ALPH), int(rng.integers(6, 10)))) for _ in range(n)]
    return Dataset.from_dict({"prompt": prompts, "chosen": good, "rejected": bad})


def run_dpo_ipo_lora(out, base):
    from peft import LoraConfig
    from trl import DPOConfig, DPOTrainer
    seed_all(24)
    model, tok = load(base)
    tr, ev = pref_ds(320, 1), pref_ds(32, 2)
    cfg = DPOConfig(**common_kw(out, max_steps=40, loss_type=["ipo"], beta=0.1, learning_rate=5e-3,
                                eval_strategy="steps", eval_steps=10, per_device_eval_batch_size=16,
                                lr_scheduler_type="linear", warmup_steps=4, max_length=48,
                                save_strategy="steps", save_steps=40, save_total_limit=1))
    peft_cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"], lora_dropout=0.0,
                          task_type="CAUSAL_LM")
    t = DPOTrainer(model=model, args=cfg, train_dataset=tr, eval_dataset=ev, processing_class=tok,
                   peft_config=peft_cfg)
    t.train()
    finish(t)
    assert_learned(out, losses(t), ratio=0.9)
    return entry(versions("transformers", "trl", "peft"), "dpo", "adapter", "trl", precision=prec(t), log_interval=2,
                 optimizer="adamw", schedule="linear", accum_steps=1)


def run_dpo_sigmoid_full(out, base):
    from trl import DPOConfig, DPOTrainer
    seed_all(25)
    model, tok = load(base)
    tr = pref_ds(320, 3)
    cfg = DPOConfig(**common_kw(out, num_train_epochs=1, loss_type=["sigmoid"], beta=0.1, learning_rate=1e-3,
                                lr_scheduler_type="cosine", warmup_steps=0.1, max_length=48, logging_first_step=True))
    t = DPOTrainer(model=model, args=cfg, train_dataset=tr, processing_class=tok)
    t.train()
    finish(t)
    assert_learned(out, losses(t), ratio=0.9)
    return entry(made_by(), "dpo", "pretrained", "trl", precision=prec(t), log_interval=2, optimizer="adamw", schedule="cosine",
                 accum_steps=1)


def run_kto(out, base):
    from trl import KTOConfig, KTOTrainer
    seed_all(26)
    model, tok = load(base)
    p = pref_ds(320, 4)
    prompts = list(p["prompt"]) * 2
    comps = list(p["chosen"]) + list(p["rejected"])
    labels = [True] * len(p) + [False] * len(p)
    ds = Dataset.from_dict({"prompt": prompts, "completion": comps, "label": labels}).shuffle(seed=0)
    cfg = KTOConfig(**common_kw(out, max_steps=40, beta=0.1, learning_rate=1e-3, lr_scheduler_type="linear",
                                max_length=48, per_device_train_batch_size=16))
    t = KTOTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
    t.train()
    finish(t)
    return entry(made_by(), "dpo", "pretrained", "trl", precision=prec(t), log_interval=2, optimizer="adamw", schedule="linear",
                 accum_steps=1)


def run_orpo(out, base):
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer
    seed_all(27)
    model, tok = load(base)
    tr = pref_ds(320, 5)
    cfg = ORPOConfig(**common_kw(out, max_steps=40, beta=0.1, learning_rate=2e-3, lr_scheduler_type="linear",
                                 max_length=48, report_to="none"))
    t = ORPOTrainer(model=model, args=cfg, train_dataset=tr, processing_class=tok)
    t.train()
    finish(t)
    return entry(made_by(), "dpo", "pretrained", "trl", precision=prec(t), log_interval=2, optimizer="adamw", schedule="linear",
                 accum_steps=1)


# ---------------------------------------------------------------- GRPO
def reward_vowels(completions, **kw):
    return [sum(c in "aeiou" for c in s) / max(1, len(s)) for s in completions]


def reward_short_words(completions, **kw):
    out = []
    for s in completions:
        words = s.split()
        out.append(-abs(np.mean([len(w) for w in words]) - 3.0) / 3.0 if words else -1.0)
    return out


def run_grpo_two_rewards(out, base):
    from trl import GRPOConfig, GRPOTrainer
    seed_all(28)
    model, tok = load(base)
    ds = Dataset.from_dict({"prompt": chain_texts(256, 9, 4, 10, chain=3)})
    cfg = GRPOConfig(**common_kw(out, max_steps=30, learning_rate=3e-3, num_generations=4,
                                 per_device_train_batch_size=8, max_completion_length=12, temperature=1.0,
                                 beta=0.0, lr_scheduler_type="constant", logging_steps=1,
                                 reward_weights=[1.0, 0.5]))
    t = GRPOTrainer(model=model, reward_funcs=[reward_vowels, reward_short_words], args=cfg, train_dataset=ds,
                    processing_class=tok)
    t.train()
    finish(t)
    rew = [h["reward"] for h in t.state.log_history if "reward" in h]
    print("grpo reward first/last", np.mean(rew[:5]), np.mean(rew[-5:]), flush=True)
    return entry(made_by(), "grpo", "pretrained", "trl", precision=prec(t), log_interval=1, optimizer="adamw", schedule="constant",
                 accum_steps=1)


RUNS = [
    ("trl_sft_packing", run_sft_packing),
    ("trl_sft_chat_messages_assistant_only", run_sft_messages),
    ("trl_sft_lora_messages", run_sft_lora),
    ("trl_dpo_ipo_lora", run_dpo_ipo_lora),
    ("trl_dpo_sigmoid_full", run_dpo_sigmoid_full),
    ("trl_kto", run_kto),
    ("trl_orpo", run_orpo),
    ("trl_grpo_two_rewards", run_grpo_two_rewards),
]


def main(out_dir, only=None):
    answers = {}
    tmp = tempfile.mkdtemp(prefix="heldout_trl_base_")
    try:
        base = hf_runs.train_base(os.path.join(tmp, "tiny-llama-base"))
        for name, fn in RUNS:
            if only and name not in only:
                continue
            d = os.path.join(out_dir, name)
            shutil.rmtree(d, ignore_errors=True)
            answers[name] = fn(d, base)
            print("done", name, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return answers
