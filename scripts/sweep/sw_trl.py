"""TRL runs on the local bases: SFTTrainer (prompt/completion rows, completion-only loss),
DPOTrainer (easy preferences, and hard ones: 30% of the pairs flipped, as annotators
disagree), GRPOTrainer (a programmatic reward), full fine-tunes and LoRA adapters."""
import os

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from sw_common import V, markov, words

BASES = {"gpt2": "_bases/tiny-gpt2-markov", "llama": "_bases/tiny-llama-markov"}


def peft_cfg(arch):
    from peft import LoraConfig

    targets = ["c_attn", "c_proj", "c_fc"] if arch == "gpt2" else \
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    return LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=targets,
                      task_type="CAUSAL_LM")


def common(out, s):
    sched = s["sched"]
    warm = 0 if sched == "constant" else (s["warmup"] if s["warmup"] is not None
                                          else max(1, s["steps"] // 10))
    kw = dict(output_dir=str(out), max_steps=s["steps"], learning_rate=s["lr"],
              lr_scheduler_type=sched, warmup_steps=warm, per_device_train_batch_size=s["bs"],
              gradient_accumulation_steps=s["accum"], logging_steps=s["log"],
              save_steps=s["save"] or 500, save_total_limit=s["save_limit"], bf16=s["bf16"],
              report_to=[] if s["report"] == "none" else [s["report"]], use_cpu=True,
              seed=s["seed"], dataloader_num_workers=0, disable_tqdm=True,
              logging_first_step=s["first_step"])
    if sched == "polynomial":
        kw["lr_scheduler_kwargs"] = {"power": 2.0, "lr_end": s["lr"] * 0.01}
    if s["optim"] == "adafactor":
        kw["optim"] = "adafactor"
    elif s["optim"] == "sgd":
        kw.update(optim="sgd", optim_args="momentum=0.9")
    return kw


def model_for(s):
    torch.manual_seed(s["seed"])
    if s["init"] == "scratch":
        from sw_hf import scratch_lm
        return scratch_lm(s["arch"])
    return AutoModelForCausalLM.from_pretrained(BASES[s["arch"]])


def sft_data(n, seed, chain=1):
    rows = markov(n, 24, seed=seed, chain=chain)
    return Dataset.from_dict({"prompt": [words(r[:12]) for r in rows],
                              "completion": [" " + words(r[12:]) for r in rows]})


def pref_data(n, seed, flip=0.0):
    """chosen: the chain's continuation; rejected: random words. flip: the fraction of pairs
    whose labels are swapped (annotator disagreement), which caps preference accuracy."""
    rows = markov(n, 16, seed=seed, chain=1)
    g = torch.Generator().manual_seed(seed)
    bad = torch.randint(0, V, (n, 8), generator=g)
    swap = torch.rand(n, generator=g) < flip
    ch, rj = [], []
    for r, b, sw in zip(rows, bad, swap):
        good, worse = " " + words(r[8:]), " " + words(b)
        ch.append(worse if sw else good)
        rj.append(good if sw else worse)
    return Dataset.from_dict({"prompt": [words(r[:8]) for r in rows], "chosen": ch,
                              "rejected": rj})


def run(out, spec):
    s = dict(steps=200, log=10, sched="cosine", warmup=None, lr=None, optim="adamw", bf16=False,
             accum=1, bs=8, save=None, save_limit=None, report="tensorboard", first_step=False,
             stop_at=None, resume_from=None, arch="gpt2", init="pretrained", flip=0.0,
             beta=0.1, num_gen=4, loss_type=None, packing=False, save_final=False)
    s.update(spec)
    kind = s["kind"]
    if s["lr"] is None:
        s["lr"] = {("sft", "scratch"): 3e-3, ("sft", "pretrained"): 5e-4, ("sft", "adapter"): 3e-3,
                   ("dpo", "pretrained"): 5e-4, ("dpo", "adapter"): 5e-3,
                   ("grpo", "pretrained"): 1e-3, ("grpo", "adapter"): 5e-3}[(kind, s["init"])]
    tok = AutoTokenizer.from_pretrained(BASES[s["arch"]])
    model = model_for(s)
    peft = peft_cfg(s["arch"]) if s["init"] == "adapter" else None
    kw = common(out, s)
    n = s["steps"] * s["bs"] * s["accum"]
    if kind == "sft":
        from trl import SFTConfig, SFTTrainer
        if s["packing"]:
            rows = markov(n // 2, 48, seed=s["seed"], chain=1)
            ds = Dataset.from_dict({"text": [words(r) for r in rows]})
            args = SFTConfig(**kw, max_length=32, packing=True)
        else:
            ds = sft_data(n, s["seed"], chain=0 if s["init"] == "scratch" else 1)
            args = SFTConfig(**kw, max_length=32, completion_only_loss=True)

        def make():
            return SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                              peft_config=peft)
    elif kind == "dpo":
        from trl import DPOConfig, DPOTrainer
        extra = {"loss_type": [s["loss_type"]]} if s["loss_type"] else {}
        args = DPOConfig(**kw, beta=s["beta"], max_length=24, **extra)
        ds = pref_data(n, s["seed"] + 5, s["flip"])

        def make():
            return DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                              peft_config=peft)
    else:
        from trl import GRPOConfig, GRPOTrainer
        rows = markov(256, 8, seed=s["seed"] + 9, chain=1)
        ds = Dataset.from_dict({"prompt": [words(r) for r in rows]})

        def low_words(completions, **kw):
            """Share of the completion's words among t0..t15."""
            out = []
            for c in completions:
                w = c.split()
                out.append(sum(1 for x in w if x.startswith("t") and int(x[1:]) < 16) / max(1, len(w)))
            return out

        extra = {"loss_type": s["loss_type"]} if s["loss_type"] else {}
        args = GRPOConfig(**kw, num_generations=s["num_gen"], max_completion_length=8,
                          beta=s["beta"], temperature=1.0, **extra)

        def make():
            return GRPOTrainer(model=model, reward_funcs=low_words, args=args, train_dataset=ds,
                               processing_class=tok, peft_config=peft)
    if s["stop_at"]:
        from sw_hf import StopAt
        tr = make()
        tr.add_callback(StopAt(s["stop_at"]))
        tr.train()
        model = model_for(s)
        tr = make()
        tr.train(resume_from_checkpoint=os.path.join(out, f"checkpoint-{s['resume_from']}"))
    else:
        tr = make()
        tr.train()
    if s["save_final"]:
        tr.save_model(str(out / "final"))
    return tr.state.log_history
