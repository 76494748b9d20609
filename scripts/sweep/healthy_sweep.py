"""Generate the healthy sweep: ~170 HEALTHY tiny training runs made with real training code
(HF Trainer, TRL, PyTorch Lightning, plain PyTorch loops, nanoGPT's train.py layout), one
folder per run under --out laid out as the framework writes it, plus answers.json with the
run's true profile. Every run is checked before it is recorded (finite losses that fall from
scratch / stay low when fine-tuned, logged at the stated interval, DPO/GRPO learning).

    python healthy_sweep.py --out DIR [--subset] [--only NAME ...] [--jobs N] [--list]
"""
import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import time
import traceback
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PYTHONWARNINGS", "ignore")

# ---------------------------------------------------------------------------------- the grid

RUNS = {}  # name -> (framework, kw)


def add(fw, name, **kw):
    assert name not in RUNS, name
    kw.setdefault("seed", zlib.crc32(name.encode()) % 997)
    RUNS[name] = (fw, kw)


def hf(name, **kw):
    kw.setdefault("task", "lm")
    kw.setdefault("arch", "gpt2")
    kw.setdefault("init", "scratch")
    if kw.get("steps", 300) >= 1000 and kw["task"] == "lm" and kw["init"] == "scratch":
        kw.setdefault("order", 2)
    add("hf_trainer", name, **kw)


# --- HF Trainer, causal LM ------------------------------------------------------------------
hf("hf_lm_scratch_cosine_l10", steps=300, log=10, sched="cosine")  # checkpoint at the end only
hf("hf_lm_scratch_linear_l1", steps=100, log=1, sched="linear", save=50, lr=5e-3)
hf("hf_lm_scratch_constant_l5", steps=200, log=5, sched="constant", lr=2e-3, save=100)
hf("hf_lm_scratch_cwarm_l10_bf16", steps=300, log=10, sched="constant_with_warmup", bf16=True,
   lr=2e-3, save=100, save_limit=2)
hf("hf_lm_scratch_poly_l50", steps=1000, log=50, sched="polynomial", save=250, save_limit=2,
   n_embd=32)
hf("hf_lm_scratch_llama_cosine_l500_s2000", steps=2000, log=500, sched="cosine", save=1000,
   n_embd=32, arch="llama")
hf("hf_lm_scratch_linear_l100_s2000", steps=2000, log=100, sched="linear", save=1000,
   n_embd=32)
hf("hf_lm_scratch_adafactor_l10", steps=300, log=10, sched="linear", optim="adafactor", lr=3e-3)
hf("hf_lm_scratch_onegroup_l10", steps=300, log=10, sched="cosine", optim="adamw_one_group")
hf("hf_lm_scratch_sgd_l10", steps=300, log=10, sched="cosine", optim="sgd", lr=0.3)
hf("hf_lm_scratch_accum4_l10", steps=200, log=10, sched="cosine", accum=4, bs=4)
hf("hf_lm_scratch_bf16_accum4_l5", steps=150, log=5, sched="linear", accum=4, bs=4, bf16=True)
hf("hf_lm_scratch_init0_l10", steps=300, log=10, sched="cosine", init0=True, save=150)
hf("hf_lm_scratch_firststep_l10", steps=300, log=10, sched="cosine", first_step=True)
hf("hf_lm_scratch_llama_cosine_l10", steps=300, log=10, arch="llama", sched="cosine")
hf("hf_lm_scratch_llama_bf16_l5", steps=200, log=5, arch="llama", sched="linear", bf16=True)
hf("hf_lm_scratch_s50_l1", steps=50, log=1, sched="linear", lr=1e-2, warmup=5)
hf("hf_lm_scratch_eval_l10", steps=300, log=10, sched="cosine", eval=100, save=100)
hf("hf_lm_scratch_stdout_l10", steps=300, log=10, sched="linear", stdout=True)
hf("hf_lm_scratch_savelimit_l10", steps=400, log=10, sched="cosine", save=50, save_limit=2)
hf("hf_lm_scratch_nolog_report_l50", steps=500, log=50, sched="cosine", report="none", save=250)
hf("hf_lm_scratch_wd01_l5", steps=300, log=5, sched="cosine", wd=0.1, warmup=0)
# fine-tunes of the local base (config.json _name_or_path = _bases/...)
hf("hf_lm_ft_gpt2_cosine_l10", init="pretrained", steps=200, log=10, sched="cosine")
hf("hf_lm_ft_gpt2_linear_l5", init="pretrained", steps=150, log=5, sched="linear", save=75)
hf("hf_lm_ft_gpt2_constant_l1", init="pretrained", steps=60, log=1, sched="constant", lr=2e-4)
hf("hf_lm_ft_llama_cosine_l10", init="pretrained", arch="llama", steps=200, log=10)
hf("hf_lm_ft_gpt2_adafactor_l10", init="pretrained", steps=200, log=10, optim="adafactor",
   sched="linear", lr=1e-3)
hf("hf_lm_ft_gpt2_bf16_accum4_l5", init="pretrained", steps=100, log=5, bf16=True, accum=4,
   bs=4)
hf("hf_lm_ft_gpt2_init0_l10", init="pretrained", steps=200, log=10, init0=True, save=100)
hf("hf_lm_ft_gpt2_poly_l50", init="pretrained", steps=500, log=50, sched="polynomial", save=250,
   save_limit=1)
hf("hf_lm_ft_gpt2_onegroup_l10", init="pretrained", steps=200, log=10, optim="adamw_one_group")
# LoRA adapters
hf("hf_lm_lora_gpt2_cosine_l10", init="adapter", steps=200, log=10, sched="cosine")
hf("hf_lm_lora_gpt2_linear_l5_bf16", init="adapter", steps=150, log=5, sched="linear", bf16=True)
hf("hf_lm_lora_llama_constant_l10", init="adapter", arch="llama", steps=200, log=10,
   sched="constant", lr=2e-3)
hf("hf_lm_lora_gpt2_accum4_l1", init="adapter", steps=60, log=1, accum=4, bs=4)
hf("hf_lm_lora_llama_cwarm_l50", init="adapter", arch="llama", steps=500, log=50,
   sched="constant_with_warmup", lr=2e-3, save=250)
# resumed with resume_from_checkpoint after the first job stopped between saves
hf("hf_lm_resume_scratch_cosine_l10", steps=400, log=10, save=100, stop_at=237, resume_from=200)
hf("hf_lm_resume_scratch_linear_l5", steps=300, log=5, sched="linear", save=50, stop_at=130,
   resume_from=100)
hf("hf_lm_resume_ft_gpt2_l10", init="pretrained", steps=300, log=10, save=100, stop_at=150,
   resume_from=100)
hf("hf_lm_resume_lora_gpt2_l10", init="adapter", steps=300, log=10, save=100, stop_at=210,
   resume_from=200)
hf("hf_lm_resume_scratch_bf16_accum4_l10", steps=200, log=10, bf16=True, accum=4, bs=4,
   save=100, stop_at=100, resume_from=100)
hf("hf_lm_resume_scratch_adafactor_l10", steps=300, log=10, optim="adafactor", sched="linear",
   save=100, stop_at=260, resume_from=200)

# --- HF Trainer, sequence classification ----------------------------------------------------
for nm, kw in [
        ("hf_cls_scratch_bert_linear_l10", dict(steps=300, log=10, sched="linear")),
        ("hf_cls_scratch_bert_cosine_l5_eval", dict(steps=300, log=5, eval=100, save=150)),
        ("hf_cls_scratch_bert_constant_l1", dict(steps=100, log=1, sched="constant", lr=1e-3)),
        ("hf_cls_scratch_bert_bf16_l10", dict(steps=300, log=10, bf16=True, n_cls=4)),
        ("hf_cls_scratch_bert_accum4_l10", dict(steps=200, log=10, accum=4, bs=4)),
        ("hf_cls_scratch_bert_adafactor_l10", dict(steps=300, log=10, optim="adafactor")),
        ("hf_cls_scratch_bert_poly_l50", dict(steps=1000, log=50, sched="polynomial", save=500,
                                              n_cls=4, bs=8)),
        ("hf_cls_scratch_bert_onegroup_l10", dict(steps=300, log=10, optim="adamw_one_group")),
        ("hf_cls_ft_gpt2_linear_l10", dict(init="pretrained", steps=200, log=10, sched="linear",
                                           lr=1e-3)),
        ("hf_cls_ft_gpt2_cosine_l5", dict(init="pretrained", steps=200, log=5, lr=1e-3, n_cls=4)),
        ("hf_cls_ft_llama_linear_l10", dict(init="pretrained", arch="llama", steps=200, log=10,
                                            sched="linear", lr=1e-3)),
        ("hf_cls_lora_gpt2_l10", dict(init="adapter", steps=200, log=10, lr=5e-3)),
        ("hf_cls_lora_llama_l10", dict(init="adapter", arch="llama", steps=200, log=10, lr=5e-3)),
        ("hf_cls_resume_bert_l10", dict(steps=300, log=10, save=100, stop_at=140, resume_from=100)),
]:
    hf(nm, task="cls", arch=kw.pop("arch", "bert" if "bert" in nm else "gpt2"), **kw)


# --- TRL -------------------------------------------------------------------------------------
def trl(name, kind, **kw):
    kw.setdefault("init", "pretrained")
    add("trl", name, kind=kind, **kw)


trl("trl_sft_ft_gpt2_cosine_l10", "sft", steps=200, log=10)
trl("trl_sft_ft_gpt2_linear_l5", "sft", steps=150, log=5, sched="linear")
trl("trl_sft_ft_gpt2_constant_l1", "sft", steps=60, log=1, sched="constant", lr=3e-4)
trl("trl_sft_ft_llama_cosine_l10", "sft", arch="llama", steps=200, log=10)
trl("trl_sft_ft_gpt2_bf16_accum4_l10", "sft", steps=120, log=10, bf16=True, accum=4, bs=4)
trl("trl_sft_ft_gpt2_adafactor_l10", "sft", steps=200, log=10, optim="adafactor", lr=1e-3)
trl("trl_sft_ft_gpt2_poly_l50", "sft", steps=500, log=50, sched="polynomial", save=250,
    save_limit=1)
trl("trl_sft_ft_gpt2_packing_l10", "sft", steps=200, log=10, packing=True)
trl("trl_sft_lora_gpt2_cosine_l10", "sft", init="adapter", steps=200, log=10)
trl("trl_sft_lora_llama_linear_l5", "sft", init="adapter", arch="llama", steps=150, log=5,
    sched="linear")
trl("trl_sft_lora_gpt2_cwarm_l10_bf16", "sft", init="adapter", steps=200, log=10,
    sched="constant_with_warmup", bf16=True, lr=2e-3)
trl("trl_sft_scratch_gpt2_cosine_l10", "sft", init="scratch", steps=300, log=10)
trl("trl_sft_resume_gpt2_l10", "sft", steps=300, log=10, save=100, stop_at=170, resume_from=100)
trl("trl_dpo_ft_gpt2_cosine_l10", "dpo", steps=200, log=10)
trl("trl_dpo_ft_gpt2_linear_l5", "dpo", steps=150, log=5, sched="linear")
trl("trl_dpo_ft_gpt2_constant_l1", "dpo", steps=60, log=1, sched="constant", lr=3e-4)
trl("trl_dpo_ft_llama_cosine_l10", "dpo", arch="llama", steps=200, log=10)
trl("trl_dpo_ft_gpt2_bf16_l10", "dpo", steps=200, log=10, bf16=True)
trl("trl_dpo_ft_gpt2_accum4_l5", "dpo", steps=100, log=5, accum=4, bs=4)
trl("trl_dpo_ft_gpt2_beta05_l10", "dpo", steps=200, log=10, beta=0.5, lr=2e-4)
trl("trl_dpo_lora_gpt2_cosine_l10", "dpo", init="adapter", steps=200, log=10)
trl("trl_dpo_lora_llama_linear_l10", "dpo", init="adapter", arch="llama", steps=200, log=10,
    sched="linear")
trl("trl_dpo_hard_gpt2_cosine_l10", "dpo", steps=200, log=10, flip=0.3, hard=True)
trl("trl_dpo_hard_gpt2_linear_l5", "dpo", steps=200, log=5, flip=0.3, sched="linear", lr=3e-4,
    hard=True)
trl("trl_dpo_hard_llama_constant_l10", "dpo", arch="llama", steps=200, log=10, flip=0.3,
    sched="constant", lr=3e-4, hard=True)
trl("trl_dpo_resume_gpt2_l10", "dpo", steps=300, log=10, save=100, stop_at=150, resume_from=100)
trl("trl_grpo_ft_gpt2_l5", "grpo", steps=60, log=5)
trl("trl_grpo_ft_gpt2_constant_l1", "grpo", steps=40, log=1, sched="constant", lr=5e-4)
trl("trl_grpo_ft_gpt2_linear_l10", "grpo", steps=100, log=10, sched="linear")
trl("trl_grpo_ft_llama_l5", "grpo", arch="llama", steps=60, log=5)
trl("trl_grpo_ft_gpt2_kl_l5", "grpo", steps=60, log=5, beta=0.04)
trl("trl_grpo_lora_gpt2_l5", "grpo", init="adapter", steps=60, log=5)
trl("trl_grpo_ft_gpt2_bf16_l5", "grpo", steps=60, log=5, bf16=True)
trl("trl_grpo_ft_gpt2_grpoloss_l5", "grpo", steps=60, log=5, loss_type="grpo", beta=0.0)
trl("trl_grpo_ft_gpt2_accum4_l5", "grpo", steps=40, log=5, accum=4, bs=4)


# --- PyTorch Lightning ------------------------------------------------------------------------
def lit(name, **kw):
    kw.setdefault("init", "scratch")
    if (kw.get("steps") or 0) >= 1000 and kw.get("task", "lm") == "lm":
        kw.setdefault("order", 2)
    add("lightning", name, **kw)


lit("lit_lm_scratch_cosine_l10_csv", steps=300, log=10, loggers=("csv",))
lit("lit_lm_scratch_cosine_l10_tb", steps=300, log=10, loggers=("tb",))
lit("lit_lm_scratch_linear_l5_both", steps=300, log=5, sched="linear", loggers=("tb", "csv"))
lit("lit_lm_scratch_constant_l1", steps=100, log=1, sched="constant", lr=2e-3, every=50)
lit("lit_lm_scratch_cwarm_l50", steps=1000, log=50, sched="constant_with_warmup", lr=2e-3,
    every=500, n_embd=16)
lit("lit_lm_scratch_poly_l10", steps=300, log=10, sched="polynomial", every=150)
lit("lit_lm_scratch_sgd_l10", steps=300, log=10, optim="sgd", every=300)
lit("lit_lm_scratch_onegroup_l10", steps=300, log=10, optim="adamw_one_group", every=150)
lit("lit_lm_scratch_adafactor_l10", steps=300, log=10, optim="adafactor", sched="linear",
    every=150)
lit("lit_lm_scratch_bf16_l10", steps=300, log=10, precision="bf16-mixed", every=150)
lit("lit_lm_scratch_accum4_l10", steps=200, log=10, accum=4, bs=4, every=100)
lit("lit_lm_scratch_init0_l10", steps=300, log=10, init0=True, every=150)
lit("lit_lm_scratch_l500_s3000", steps=3000, log=500, every=1500, n_embd=32)
lit("lit_lm_scratch_l100_s2000_tb", steps=2000, log=100, every=1000, n_embd=16, n_layer=1, bs=8,
    loggers=("tb",), sched="linear")
lit("lit_lm_scratch_val_l10", steps=300, log=10, val_every=100, every=100, top_k=2,
    save_last=True)
lit("lit_lm_scratch_epochs_l10", epochs=4, n_rows=16 * 75, log=10, every=150, steps=None)
lit("lit_lm_ft_cosine_l10", init="pretrained", steps=200, log=10, every=100)
lit("lit_lm_ft_linear_l5_bf16", init="pretrained", steps=150, log=5, sched="linear",
    precision="bf16-mixed", every=150)
lit("lit_lm_ft_sgd_l10", init="pretrained", steps=200, log=10, optim="sgd", every=200)
lit("lit_lm_resume_v1_cosine_l10", steps=400, log=10, every=200, stop_at=237, resume_from=200)
lit("lit_lm_resume_v1_linear_l5_tb", steps=300, log=5, sched="linear", every=100, stop_at=150,
    resume_from=100, loggers=("tb",))
lit("lit_lm_resume_v1_sgd_l10", steps=300, log=10, optim="sgd", every=100, stop_at=230,
    resume_from=200)
lit("lit_lm_resume_v1_ft_l10", init="pretrained", steps=300, log=10, every=100, stop_at=120,
    resume_from=100)
lit("lit_cls_scratch_l10", task="cls", steps=300, log=10, every=150)
lit("lit_cls_scratch_bf16_l5", task="cls", steps=300, log=5, precision="bf16-mixed", every=300)
lit("lit_cls_ft_l10", task="cls", init="pretrained", steps=200, log=10, every=200)


# --- plain PyTorch loops --------------------------------------------------------------------
def plain(name, **kw):
    kw.setdefault("init", "scratch")
    if kw.get("steps", 300) >= 1000 and kw.get("task", "lm") == "lm" and kw["init"] == "scratch":
        kw.setdefault("order", 2)
    add("plain", name, **kw)


plain("plain_lm_scratch_jsonl_cosine_l10", steps=300, log=10, save_every=100)
plain("plain_lm_scratch_jsonl_linear_l1", steps=100, log=1, sched="linear", save_every=50,
      style="before", agg="last")
plain("plain_lm_scratch_jsonl_constant_l5", steps=300, log=5, sched="constant", lr=1e-3)
plain("plain_lm_scratch_csv_cwarm_l10", steps=300, log=10, fmt="csv", sched="constant_with_warmup",
      lr=1e-3, save_every=150, ckpt="st")
plain("plain_lm_scratch_csv_poly_l50", steps=1000, log=50, fmt="csv", sched="polynomial",
      save_every=500, n_embd=32)
plain("plain_lm_scratch_stdout_cosine_l10", steps=300, log=10, fmt="stdout", save_every=150)
plain("plain_lm_scratch_stdout_linear_l100", steps=2000, log=100, fmt="stdout", sched="linear",
      save_every=1000, n_embd=16, n_layer=1, bs=8, seq=16, line="pipe")
plain("plain_lm_scratch_stdout_l500_s3000", steps=3000, log=500, fmt="stdout", save_every=1500,
      n_embd=32, line="kv")
plain("plain_lm_scratch_jsonl_l500_s2000", steps=2000, log=500, save_every=1000, n_embd=16,
      n_layer=1, bs=8, seq=16, style="before", agg="last")
plain("plain_lm_scratch_jsonl_sgd_l10", steps=300, log=10, optim="sgd", save_every=150)
plain("plain_lm_scratch_csv_sgd_l5", steps=300, log=5, fmt="csv", optim="sgd", sched="linear",
      lr=0.2)
plain("plain_lm_scratch_jsonl_onegroup_l10", steps=300, log=10, optim="adamw_one_group",
      save_every=300)
plain("plain_lm_scratch_stdout_onegroup_l10", steps=300, log=10, fmt="stdout",
      optim="adamw_one_group", line="slash", save_every=150, ckpt="st")
plain("plain_lm_scratch_jsonl_adafactor_l10", steps=300, log=10, optim="adafactor",
      sched="linear", save_every=150)
plain("plain_lm_scratch_jsonl_bf16_l10", steps=300, log=10, precision="bf16", save_every=150)
plain("plain_lm_scratch_csv_bf16_l10", steps=300, log=10, fmt="csv", precision="bf16",
      save_every=300, ckpt="st")
plain("plain_lm_scratch_csv_bf16_accum4_l10", steps=200, log=10, fmt="csv", precision="bf16",
      accum=4, bs=4, save_every=100)
plain("plain_lm_scratch_stdout_accum4_l5", steps=200, log=5, fmt="stdout", accum=4, bs=4,
      line="pipe")
plain("plain_lm_scratch_jsonl_init0_l10", steps=300, log=10, init0=True, save_every=300,
      ckpt="st")
plain("plain_lm_scratch_csv_ckpt0_l10", steps=300, log=10, fmt="csv", init0=True,
      save_every=150, ckpt="hfdir")
plain("plain_lm_scratch_stdout_init0_l10", steps=300, log=10, fmt="stdout", init0=True,
      save_every=150, line="kv")
plain("plain_lm_scratch_jsonl_s50_l1", steps=50, log=1, lr=1e-2, warmup=5, sched="linear")
plain("plain_lm_scratch_jsonl_bf16save_l10", steps=300, log=10, precision="bf16",
      save_dtype="bf16", ckpt="st", save_every=150)
plain("plain_lm_scratch_hfmodel_jsonl_l10", steps=300, log=10, model="hf", ckpt="hfdir",
      save_every=150)
plain("plain_lm_scratch_jsonl_eval_l10", steps=300, log=10, eval_every=100, save_every=100)
plain("plain_cls_scratch_jsonl_l10", task="cls", steps=300, log=10, save_every=150)
plain("plain_cls_scratch_csv_l5", task="cls", steps=300, log=5, fmt="csv", sched="linear")
plain("plain_cls_ft_jsonl_l10", task="cls", init="pretrained", steps=200, log=10, n_embd=32,
      save_every=200)
plain("plain_lm_ft_jsonl_cosine_l10", init="pretrained", steps=200, log=10, n_embd=32,
      save_every=100)
plain("plain_lm_ft_csv_linear_l5", init="pretrained", steps=200, log=5, n_embd=32, fmt="csv",
      sched="linear")
plain("plain_lm_ft_stdout_constant_l1", init="pretrained", steps=100, log=1, n_embd=32,
      fmt="stdout", sched="constant", lr=2e-4)
plain("plain_lm_ft_jsonl_init0_l10", init="pretrained", steps=200, log=10, n_embd=32,
      init0=True, save_every=200, ckpt="st")
plain("plain_lm_lora_jsonl_l10", init="adapter", model="hf", steps=200, log=10, ckpt="hfdir",
      save_every=100)
plain("plain_lm_lora_stdout_l5", init="adapter", model="hf", steps=200, log=5, fmt="stdout",
      ckpt="hfdir", save_every=200, sched="linear")
# resumed: a long job (shared prefix, 10000 steps) continued by a second job at 10000
PREFIX = dict(steps=12000, log=100, n_embd=16, n_layer=2, bs=8, seq=16, order=2, warmup=200,
              save_every=2000, keep_last=2, min_ratio=0.1)
plain("plain_lm_resume10k_jsonl_segments", fmt="jsonl", prefix="prefix10k_jsonl",
      resume=dict(at=10000, stop=10000, first_log="metrics_job1.jsonl",
                  second_name="metrics_job2.jsonl"), **PREFIX)
plain("plain_lm_resume10k_jsonl_fresh", fmt="jsonl", prefix="prefix10k_jsonl",
      resume=dict(at=10000, stop=10000, second_log="only", drop_old_ckpts=True), **PREFIX)
plain("plain_lm_resume10k_csv_fresh", fmt="csv", prefix="prefix10k_csv",
      resume=dict(at=10000, stop=10000, second_log="only"), **PREFIX)
plain("plain_lm_resume10k_csv_appended", fmt="csv", prefix="prefix10k_csv",
      resume=dict(at=10000, stop=10000, second_log="append"), **PREFIX)
plain("plain_lm_resume10k_stdout_fresh", fmt="stdout", prefix="prefix10k_stdout",
      resume=dict(at=10000, stop=10000, second_log="only", drop_old_ckpts=True), **PREFIX)
plain("plain_lm_resume10k_stdout_appended", fmt="stdout", prefix="prefix10k_stdout",
      resume=dict(at=10000, stop=10000, second_log="append",
                  banner=["resuming from checkpoints/step_10000.pt (step 10000)"]), **PREFIX)
# resumed after a crash between saves: the steps after the checkpoint are logged twice
plain("plain_lm_resume_jsonl_crash", steps=600, log=10, save_every=100,
      resume=dict(at=400, stop=437, second_name="metrics.resume.jsonl"))
plain("plain_lm_resume_csv_appended", steps=600, log=10, fmt="csv", save_every=200, ckpt="st",
      resume=dict(at=400, stop=450, second_log="append"))
plain("plain_lm_resume_stdout_appended", steps=500, log=5, fmt="stdout", save_every=100,
      resume=dict(at=300, stop=333, second_log="append",
                  banner=["=> loaded checkpoint checkpoints/step_300.pt (step 300)"]))
plain("plain_lm_resume_ft_jsonl", init="pretrained", n_embd=32, steps=300, log=10,
      save_every=100, resume=dict(at=200, stop=214, second_name="metrics.1.jsonl"))


# --- nanoGPT train.py layout -----------------------------------------------------------------
def nano(name, **kw):
    if kw.get("max_iters", 300) >= 1000 and kw.get("init_from", "scratch") == "scratch":
        kw.setdefault("order", 2)
    add("nanogpt", name, **kw)


nano("nanogpt_scratch_l1", max_iters=300, log_interval=1)
nano("nanogpt_scratch_l10", max_iters=600, log_interval=10, eval_interval=200)
nano("nanogpt_scratch_l10_bf16", max_iters=300, log_interval=10, dtype="bfloat16",
     device="cuda")
nano("nanogpt_scratch_accum4_l10", max_iters=200, log_interval=10, gradient_accumulation_steps=4,
     batch_size=4, eval_interval=100)
nano("nanogpt_scratch_l100_s2000", max_iters=2000, log_interval=100, eval_interval=500,
     n_embd=16, n_layer=1, batch_size=8, block_size=16, warmup_iters=100)
nano("nanogpt_scratch_l500_s2000", max_iters=2000, log_interval=500, eval_interval=1000,
     n_embd=16, n_layer=1, batch_size=8, block_size=16, warmup_iters=100)
nano("nanogpt_scratch_nohup_l10", max_iters=300, log_interval=10, log_name="nohup.out")
nano("nanogpt_scratch_slurm_l5", max_iters=300, log_interval=5, log_name="slurm-81234.out")
nano("nanogpt_scratch_constlr_l10", max_iters=300, log_interval=10, decay_lr=False,
     learning_rate=1e-3)
nano("nanogpt_scratch_compile_l10", max_iters=300, log_interval=10, compile=True)
nano("nanogpt_scratch_bestonly_l10", max_iters=400, log_interval=10, always_save_checkpoint=False)
nano("nanogpt_ft_l5", init_from="_bases/tiny-gpt2-markov", max_iters=200, log_interval=5,
     learning_rate=3e-4, decay_lr=False, eval_interval=50, always_save_checkpoint=False)
nano("nanogpt_ft_l1_bf16", init_from="_bases/tiny-gpt2-markov", max_iters=100, log_interval=1,
     learning_rate=3e-4, decay_lr=False, eval_interval=50, dtype="bfloat16", device="cuda")
nano("nanogpt_ft_cosine_l10", init_from="_bases/tiny-gpt2-markov", max_iters=300,
     log_interval=10, learning_rate=1e-3, min_lr=1e-4, warmup_iters=20)
nano("nanogpt_resume_l10", max_iters=600, log_interval=10, eval_interval=100,
     resume=dict(stop=437))
nano("nanogpt_resume_newlog_l10", max_iters=500, log_interval=10, eval_interval=100,
     resume=dict(stop=250, second_log="train_resume.log"))
nano("nanogpt_resume_l1_accum4", max_iters=300, log_interval=1, eval_interval=100,
     gradient_accumulation_steps=4, batch_size=4, resume=dict(stop=150))

# one run per class, small on disk (tests/sweep)
SUBSET = [
    "hf_lm_scratch_cosine_l10",            # HF default: no step-0 save; first point = mean of 10
    "hf_lm_ft_gpt2_cosine_l10",            # fine-tune of a local base, low first loss
    "hf_lm_lora_gpt2_cosine_l10",          # LoRA adapter
    "hf_lm_scratch_adafactor_l10",         # Adafactor
    "hf_cls_scratch_bert_linear_l10",      # sequence classification
    "trl_sft_ft_gpt2_cosine_l10",          # SFT
    "trl_dpo_hard_gpt2_cosine_l10",        # DPO on hard preferences
    "trl_grpo_ft_gpt2_l5",                 # GRPO, loss ~0 at the start
    "lit_lm_scratch_sgd_l10",              # SGD (Lightning)
    "lit_lm_resume_v1_cosine_l10",         # Lightning version_0 + version_1 resume
    "plain_lm_scratch_jsonl_onegroup_l10", # stock one-group AdamW
    "plain_lm_scratch_jsonl_init0_l10",    # step-0 save (init.safetensors)
    "plain_lm_scratch_csv_bf16_l10",       # bf16 autocast
    "plain_lm_resume10k_jsonl_segments",   # resumed at 10000, two JSONL segments
    "plain_lm_resume10k_stdout_fresh",     # resumed at 10000, a train.log that starts there
    "nanogpt_scratch_accum4_l10",          # ckpt.pt overwritten; accumulation 4
]


# ---------------------------------------------------------------------------------- profiles

def profile(fw, kw):
    """The true profile of a run, from how it is made."""
    if fw in ("hf_trainer", "trl"):
        phase = {"lm": "pretrain", "cls": "classification"}[kw["task"]] if fw == "hf_trainer" \
            else kw["kind"]
        steps = kw.get("steps", 300 if fw == "hf_trainer" else 200)
        return dict(phase=phase, init=kw["init"], resumed_at=kw.get("resume_from"),
                    init_checkpoint=bool(kw.get("init0")), framework=fw,
                    precision="bf16" if kw.get("bf16") else "fp32", log_interval=kw["log"],
                    optimizer=kw.get("optim", "adamw"), schedule=kw.get("sched", "cosine"),
                    accum_steps=kw.get("accum", 1))
    if fw == "lightning":
        return dict(phase="pretrain" if kw.get("task", "lm") == "lm" else "classification",
                    init=kw["init"], resumed_at=kw.get("resume_from"),
                    init_checkpoint=bool(kw.get("init0")), framework=fw,
                    precision="bf16" if "bf16" in kw.get("precision", "32") else "fp32",
                    log_interval=kw["log"], optimizer=kw.get("optim", "adamw"),
                    schedule=kw.get("sched", "cosine"), accum_steps=kw.get("accum", 1))
    if fw == "plain":
        r = kw.get("resume")
        return dict(phase="pretrain" if kw.get("task", "lm") == "lm" else "classification",
                    init=kw["init"], resumed_at=r["at"] if r else None,
                    init_checkpoint=bool(kw.get("init0")), framework=fw,
                    precision="bf16" if kw.get("precision", "fp32") != "fp32" else "fp32",
                    log_interval=kw["log"], optimizer=kw.get("optim", "adamw"),
                    schedule=kw.get("sched", "cosine"), accum_steps=kw.get("accum", 1))
    # nanogpt
    r = kw.get("resume")
    ev = kw.get("eval_interval", 100)
    init = "scratch" if kw.get("init_from", "scratch") == "scratch" else "pretrained"
    return dict(phase="pretrain", init=init, resumed_at=(r["stop"] // ev) * ev if r else None,
                init_checkpoint=False, framework=fw,
                precision="bf16" if kw.get("dtype") == "bfloat16" else "fp32",
                log_interval=kw.get("log_interval", 10), optimizer="adamw",
                schedule="cosine" if kw.get("decay_lr", True) else "constant",
                accum_steps=kw.get("gradient_accumulation_steps", 1))


def bases_needed(fw, kw):
    if fw in ("hf_trainer", "trl"):
        if kw["init"] != "scratch" or fw == "trl":
            return {kw.get("arch", "gpt2")}
        return set()
    if fw in ("lightning", "plain"):
        if kw["init"] == "scratch":
            return set()
        return {"gpt2"} if kw.get("model") == "hf" else {"gpt"}
    return {"gpt2"} if kw.get("init_from", "scratch") not in ("scratch", "resume") else set()


def made_by(fw, kw):
    from sw_common import versions
    peft = ["peft"] if kw.get("init") == "adapter" else []
    if fw == "hf_trainer":
        return versions("torch", "transformers", *peft)
    if fw == "trl":
        return versions("torch", "transformers", "trl", *peft)
    if fw == "lightning":
        return versions("torch", "lightning")
    if fw == "plain":
        extra = ["transformers"] if kw.get("model") == "hf" else []
        return versions("torch", *extra, *peft, extra="a hand-written training loop")
    return versions("torch", extra="nanoGPT train.py layout (ckpt.pt + captured stdout)")


# ---------------------------------------------------------------------------------- checks

def interval_ok(steps, interval):
    """Logged steps are spaced by the interval: the positive gaps (a resumed job restarts with
    a zero/negative one) are the interval, but for a segment's first or last point (a
    stopped job flushes its last step; a resumed one may log its first step off the grid)."""
    steps = list(steps)
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    pos = [g for g in gaps if g > 0]
    if not pos:
        return False
    odd = [i for i, g in enumerate(gaps) if g > 0 and g != interval]
    seg_edges = {0, len(gaps) - 1} | {i for i, g in enumerate(gaps) if g <= 0} | \
        {i - 1 for i, g in enumerate(gaps) if g <= 0} | {i + 1 for i, g in enumerate(gaps) if g <= 0}
    return all(i in seg_edges for i in odd) and pos.count(interval) >= 0.8 * len(pos)


def read_lightning(out):
    """train_loss_step points of every version (CSV when present, else TensorBoard)."""
    import csv
    pts = []
    for v in sorted((out / "lightning_logs").glob("version_*"), key=lambda p: int(p.name[8:])):
        csvp = v / "metrics.csv"
        if csvp.exists():
            for row in csv.DictReader(open(csvp)):
                if row.get("train_loss_step"):
                    pts.append((int(row["step"]), float(row["train_loss_step"])))
        else:
            ev = list(v.glob("events.out.tfevents.*"))
            if not ev:
                continue
            from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
            acc = EventAccumulator(str(v))
            acc.Reload()
            if "train_loss_step" in acc.Tags()["scalars"]:
                pts += [(e.step, e.value) for e in acc.Scalars("train_loss_step")]
    return pts


def check_run(name, fw, kw, prof, out, res):
    from sw_common import Unhealthy, check_losses

    phase, init = prof["phase"], prof["init"]
    pts = res["losses"]
    steps = [s for s, _ in pts]
    if fw in ("hf_trainer", "trl") and kw.get("first_step"):
        steps = steps[1:]
    if not interval_ok(steps, prof["log_interval"]):
        raise Unhealthy(f"{name}: logged steps {steps[:6]}... not every {prof['log_interval']}")
    late = prof["resumed_at"] is not None and pts[0][0] >= prof["resumed_at"]
    check_losses(name, pts, "pretrained" if late else init, phase)
    hist = res.get("history") or []
    if phase == "dpo":
        acc = [h["rewards/accuracies"] for h in hist if "rewards/accuracies" in h]
        mar = [h["rewards/margins"] for h in hist if "rewards/margins" in h]
        tail_acc = sum(acc[-3:]) / 3
        if kw.get("hard"):
            if not 0.55 <= tail_acc <= 0.78:
                raise Unhealthy(f"{name}: hard DPO accuracy ends at {tail_acc:.2f}")
            if not (sum(mar[-3:]) / 3 > sum(mar[:2]) / 2 and sum(mar[-3:]) / 3 < 0.5):
                raise Unhealthy(f"{name}: hard DPO margins {mar[:2]} -> {mar[-3:]}")
        elif tail_acc < (0.7 if kw["init"] == "adapter" else 0.8):
            raise Unhealthy(f"{name}: DPO accuracy ends at {tail_acc:.2f}")
    if phase == "grpo":
        rw = [h["reward"] for h in hist if "reward" in h]
        k = max(1, len(rw) // 3)
        if not sum(rw[-k:]) / k > sum(rw[:k]) / k + 0.05:
            raise Unhealthy(f"{name}: GRPO reward {rw[:k]} -> {rw[-k:]}")
        if abs(pts[0][1]) > 0.1:
            raise Unhealthy(f"{name}: GRPO first loss {pts[0][1]}")
    if prof["init_checkpoint"]:
        pats = ["checkpoint-0", "init.safetensors", "checkpoints/step_0.pt",
                "lightning_logs/version_0/checkpoints/epoch=0-step=0.ckpt"]
        if not any((out / p).exists() for p in pats):
            raise Unhealthy(f"{name}: no step-0 checkpoint written")
    if prof["resumed_at"] is not None and not any(s > prof["resumed_at"] for s in steps):
        raise Unhealthy(f"{name}: nothing logged after the resume step")


# ---------------------------------------------------------------------------------- running

@contextlib.contextmanager
def quiet_fds(path, on=True):
    """Send the process's stdout/stderr (frameworks print a lot) to a file."""
    if not on:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    so, se = os.dup(1), os.dup(2)
    with open(path, "w") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(so, 1)
            os.dup2(se, 2)
            os.close(so)
            os.close(se)


def do_run(name, root, cache, quiet=True):
    """Make one run in root/name; returns (name, ok, message, profile, seconds)."""
    import torch
    torch.set_num_threads(1)
    from sw_common import Unhealthy, fresh_dir
    fw, kw = RUNS[name]
    kw = dict(kw)
    prof = profile(fw, kw)
    t0 = time.time()
    out = fresh_dir(Path(root) / name)
    logf = Path(cache) / "logs" / f"{name}.log"
    logf.parent.mkdir(parents=True, exist_ok=True)
    try:
        with quiet_fds(logf, quiet):
            res = make(fw, name, kw, out, cache)
        if res.get("resumed_at") is not None and res["resumed_at"] != prof["resumed_at"]:
            raise Unhealthy(f"{name}: resumed at {res['resumed_at']}, profile says {prof['resumed_at']}")
        check_run(name, fw, kw, prof, out, res)
    except Unhealthy as e:
        shutil.rmtree(out, ignore_errors=True)
        return name, False, str(e), prof, time.time() - t0
    except Exception:
        shutil.rmtree(out, ignore_errors=True)
        return name, False, traceback.format_exc(limit=6) + f"\n(log: {logf})", prof, time.time() - t0
    return name, True, f"{res['losses'][0][1]:.3f} -> {res['losses'][-1][1]:.3f}", prof, time.time() - t0


def make(fw, name, kw, out, cache):
    if fw == "hf_trainer":
        import sw_hf
        h = sw_hf.run(out, kw)
        return {"losses": sw_hf.losses(h), "history": h}
    if fw == "trl":
        import sw_trl
        h = sw_trl.run(out, {k: v for k, v in kw.items() if k != "hard"})
        return {"losses": [(x["step"], x["loss"]) for x in h if "loss" in x], "history": h}
    if fw == "lightning":
        import sw_lightning
        sw_lightning.run(out, kw)
        return {"losses": read_lightning(out)}
    if fw == "plain":
        import sw_plain
        return {"losses": sw_plain.run(out, kw, cache)}
    import sw_nanogpt
    logs, at = sw_nanogpt.run(out, kw)
    return {"losses": logs, "resumed_at": at}


def make_prefix(key, cache):
    import torch
    torch.set_num_threads(1)
    import sw_plain
    spec = next(kw for fw, kw in RUNS.values() if kw.get("prefix") == key)
    spec = {k: v for k, v in spec.items() if k not in ("prefix",)}
    spec["seed"] = 4242  # shared by the runs that continue it
    sw_plain.make_prefix(cache, key, spec)
    return key


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--subset", action="store_true", help="only the small one-per-class subset")
    ap.add_argument("--only", nargs="+", help="remake only these runs (merged into answers.json)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (1 thread each)")
    ap.add_argument("--list", action="store_true", help="print the run names and exit")
    ap.add_argument("--verbose", action="store_true", help="framework output to the console")
    a = ap.parse_args()
    names = list(RUNS)
    if a.subset:
        names = [n for n in names if n in SUBSET]
    if a.only:
        bad = [n for n in a.only if n not in RUNS]
        if bad:
            sys.exit(f"unknown runs: {bad}")
        names = [n for n in names if n in a.only]
    if a.list:
        for n in names:
            print(n, json.dumps(profile(*RUNS[n])))
        print(len(names), "runs")
        return
    root = Path(a.out).resolve()
    root.mkdir(parents=True, exist_ok=True)
    os.chdir(root)  # bases are referenced as _bases/... (relative, as from_pretrained got them)
    cache = root / "_cache"
    cache.mkdir(exist_ok=True)
    t0 = time.time()
    import sw_bases
    need = set()
    for n in names:
        need |= bases_needed(*RUNS[n])
    print(f"bases: {sorted(need)}", flush=True)
    with quiet_fds(cache / "bases.log", not a.verbose):
        sw_bases.ensure(need)
    prefixes = sorted({RUNS[n][1]["prefix"] for n in names if RUNS[n][1].get("prefix")})
    # keep seeds of runs that continue a shared prefix equal to the prefix's seed
    for n in names:
        if RUNS[n][1].get("prefix"):
            RUNS[n][1]["seed"] = 4242
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    results = []
    with ctx.Pool(a.jobs, maxtasksperchild=8) as pool:
        for key in pool.imap_unordered(_prefix_star, [(k, str(cache)) for k in prefixes]):
            print(f"  prefix {key} ready ({time.time() - t0:.0f}s)", flush=True)
        # slow runs first so the two workers finish together
        order = sorted(names, key=lambda n: -_cost(n))
        for r in pool.imap_unordered(_run_star, [(n, str(root), str(cache), not a.verbose)
                                                  for n in order]):
            results.append(r)
            name, ok, msg, prof, sec = r
            print(f"  [{len(results):3}/{len(names)}] {'ok  ' if ok else 'FAIL'} {name:44} "
                  f"{sec:5.1f}s  {msg.splitlines()[0] if ok else msg}", flush=True)
    ans_path = root / "answers.json"
    answers = json.loads(ans_path.read_text()) if (a.only and ans_path.exists()) else {}
    for name, ok, msg, prof, sec in results:
        if ok:
            fw, kw = RUNS[name]
            answers[name] = {"accept": [], "facts": {}, "made_by": made_by(fw, kw), "bug": None,
                             "profile": prof}
        else:
            answers.pop(name, None)
    ans_path.write_text(json.dumps(dict(sorted(answers.items())), indent=2) + "\n")
    # bases nobody uses are removed (the subset keeps only what its runs load)
    used = set()
    for n in answers:
        used |= bases_needed(*RUNS[n])
    keep = {sw_bases.HF_BASES[b] if b in sw_bases.HF_BASES else sw_bases.GPT_BASE for b in used}
    for p in (root / "_bases").iterdir():
        if f"_bases/{p.name}" not in keep and not a.only:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    failed = [r for r in results if not r[1]]
    if not a.only and not failed:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"{len(results) - len(failed)}/{len(results)} runs ok in {time.time() - t0:.0f}s; "
          f"answers: {ans_path}", flush=True)
    if failed:
        print("FAILED:", " ".join(r[0] for r in failed))
        sys.exit(1)


def _cost(n):
    fw, kw = RUNS[n]
    steps = kw.get("steps") or kw.get("max_iters") or 300
    per = {"hf_trainer": 10, "trl": 25, "lightning": 8, "plain": 4, "nanogpt": 4}[fw]
    if fw == "trl" and kw["kind"] == "grpo":
        per = 60
    if kw.get("prefix"):
        steps = 2000
    return steps * per


def _run_star(args):
    return do_run(*args)


def _prefix_star(args):
    return make_prefix(*args)


if __name__ == "__main__":
    main()
