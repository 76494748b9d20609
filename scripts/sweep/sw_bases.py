"""The pretrained bases the fine-tunes start from, trained here and saved to DIR/_bases/:
a tiny GPT-2 and a tiny Llama (transformers save_pretrained + the word-level tokenizer), and
a nanoGPT-style GPT state dict. All learn chain 0 of the Markov language; fine-tunes train
on chain 1 (a quarter of the successor rows redrawn), so they start far below ln V."""
import shutil
import tempfile
from pathlib import Path

import torch

from sw_common import NS, GPT, gpt_cfg, lr_lambda, make_optimizer, markov, tokenizer

HF_BASES = {"gpt2": "_bases/tiny-gpt2-markov", "llama": "_bases/tiny-llama-markov"}
GPT_BASE = "_bases/tiny-gpt-markov.pt"


def hf_base(arch):
    from transformers import Trainer, TrainingArguments, default_data_collator

    from sw_hf import LMRows, scratch_lm

    dest = Path(HF_BASES[arch])
    if (dest / "config.json").exists():
        return dest
    torch.manual_seed(0)
    model = scratch_lm(arch)
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, max_steps=400, learning_rate=3e-3,
                                 warmup_steps=40, lr_scheduler_type="cosine", weight_decay=0.1,
                                 per_device_train_batch_size=16, logging_steps=50,
                                 save_strategy="no", report_to=[], use_cpu=True, seed=0,
                                 disable_tqdm=True)
        tr = Trainer(model=model, args=args, data_collator=default_data_collator,
                     train_dataset=LMRows(markov(16 * 400, 32, seed=100, offset=NS)),
                     processing_class=tokenizer())
        tr.train()
        loss = [h["loss"] for h in tr.state.log_history if "loss" in h]
        assert loss[-1] < 1.9, f"base {arch} did not learn: {loss}"
        tmpdest = dest.with_name(dest.name + ".tmp")
        tr.save_model(str(tmpdest))
        tmpdest.rename(dest)
    return dest


def gpt_base():
    dest = Path(GPT_BASE)
    if dest.exists():
        return dest
    torch.manual_seed(0)
    cfg = gpt_cfg(32, 2, 2, 32)
    model = GPT(cfg)
    opt = make_optimizer("adamw", model, 3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda("cosine", 40, 600))
    x = markov(16 * 600, 33, seed=101)
    for i in range(600):
        b = x[i * 16:(i + 1) * 16]
        loss = model(b[:, :-1], b[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    assert loss.item() < 1.8, loss.item()
    dest.parent.mkdir(exist_ok=True)
    torch.save({"model": model.state_dict(), "model_args": cfg, "iter_num": 600}, str(dest) + ".tmp")
    Path(str(dest) + ".tmp").rename(dest)
    return dest


def ensure(names):
    Path("_bases").mkdir(exist_ok=True)
    for n in sorted(names):
        if n in HF_BASES:
            hf_base(n)
        elif n == "gpt":
            gpt_base()
        else:
            raise ValueError(n)
