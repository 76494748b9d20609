"""TRL runs on a tiny GPT-2 with a word-level tokenizer built here (no hub access):
SFTTrainer on prompt/completion rows (completion-only loss), DPOTrainer from the SFT model,
GRPOTrainer with a programmatic reward, RewardTrainer on the same preference pairs (a GPT-2
sequence classifier with one output: the Bradley-Terry loss reads only r_chosen - r_rejected,
so the final LayerNorm's bias, which adds the same amount to both, never gets a gradient)."""
import sys

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from common import OUT, VOCAB, markov, record, run_dir, versions

SPECIAL = ["<pad>", "<eos>", "<bos>"]


def tokenizer():
    vocab = {t: i for i, t in enumerate(SPECIAL + [f"t{i}" for i in range(VOCAB)])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<bos>")


def words(row):
    return " ".join(f"t{int(i)}" for i in row)


def base_model():
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB + 3, n_positions=48,
                     bos_token_id=2, eos_token_id=1, pad_token_id=0)
    return GPT2LMHeadModel(cfg)


def common_args(out, **kw):
    base = dict(output_dir=str(out), per_device_train_batch_size=16, logging_steps=10,
                save_steps=150, report_to=["tensorboard"], use_cpu=True, seed=0,
                lr_scheduler_type="cosine", warmup_steps=20, dataloader_num_workers=0)
    base.update(kw)
    return base


def sft(name, lr=3e-3, steps=300):
    from trl import SFTConfig, SFTTrainer

    out = run_dir(name)
    rows = markov(16 * steps, 24, vocab=VOCAB, seed=1)
    ds = Dataset.from_dict({"prompt": [words(r[:12]) for r in rows],
                            "completion": [" " + words(r[12:]) for r in rows]})
    args = SFTConfig(**common_args(out, max_steps=steps, learning_rate=lr,
                                   max_length=64, completion_only_loss=True))
    tr = SFTTrainer(model=base_model(), args=args, train_dataset=ds, processing_class=tokenizer())
    tr.train()
    tr.save_model(str(out / "final"))
    return out


def prefs(n, seed):
    rows = markov(n, 16, seed=seed)
    g = torch.Generator().manual_seed(seed)
    bad = torch.randint(0, VOCAB, (n, 8), generator=g)
    return Dataset.from_dict({"prompt": [words(r[:8]) for r in rows],
                              "chosen": [" " + words(r[8:]) for r in rows],
                              "rejected": [" " + words(b) for b in bad]})


def dpo(name, base, lr=5e-4, steps=200):
    from trl import DPOConfig, DPOTrainer

    out = run_dir(name)
    model = GPT2LMHeadModel.from_pretrained(base)
    args = DPOConfig(**common_args(out, max_steps=steps, learning_rate=lr, beta=0.1, save_steps=steps,
                                   per_device_train_batch_size=8, max_length=32))
    tr = DPOTrainer(model=model, args=args, train_dataset=prefs(8 * steps, 5),
                    processing_class=tokenizer())
    tr.train()
    return out


def grpo(name, base, lr=1e-3, steps=60, kind="grpo", reward=None, cap=8):
    """GRPOTrainer, or RLOOTrainer (kind="rloo": the same group-relative setup with a
    leave-one-out baseline; trl_more_runs.py). The reward is the share of "t5" in a completion
    unless `reward` is given; completions are cut at `cap` tokens (trl_length_runs.py: 32)."""
    if kind == "rloo":
        from trl import RLOOConfig as GRPOConfig, RLOOTrainer as GRPOTrainer
    else:
        from trl import GRPOConfig, GRPOTrainer

    out = run_dir(name)
    rows = markov(64, 8, seed=9)
    ds = Dataset.from_dict({"prompt": [words(r) for r in rows]})

    def count_t5(completions, **kw):
        return [c.split().count("t5") / max(1, len(c.split())) for c in completions]

    args = GRPOConfig(**common_args(out, max_steps=steps, learning_rate=lr, logging_steps=2,
                                    save_steps=steps, per_device_train_batch_size=8,
                                    num_generations=4, max_completion_length=cap, beta=0.04,
                                    warmup_steps=5))
    tr = GRPOTrainer(model=GPT2LMHeadModel.from_pretrained(base), reward_funcs=reward or count_t5,
                     args=args, train_dataset=ds, processing_class=tokenizer())
    tr.train()
    return out


def reward(name, lr=1e-3, steps=200):
    from transformers import GPT2ForSequenceClassification
    from trl import RewardConfig, RewardTrainer

    out = run_dir(name)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB + 3, n_positions=48,
                     bos_token_id=2, eos_token_id=1, pad_token_id=0, num_labels=1)
    args = RewardConfig(**common_args(out, max_steps=steps, learning_rate=lr, save_steps=100,
                                      per_device_train_batch_size=8, max_length=32))
    tr = RewardTrainer(model=GPT2ForSequenceClassification(cfg), args=args,
                       train_dataset=prefs(8 * steps, 5), processing_class=tokenizer())
    tr.train()
    return out


RUNS = ["trl_sft_healthy", "trl_sft_lr_100x", "trl_dpo_healthy", "trl_dpo_lr_100x",
        "trl_dpo_lr_tiny", "trl_grpo_healthy", "trl_grpo_lr_100x", "trl_reward_healthy"]

if __name__ == "__main__":
    want = sys.argv[1:] or RUNS
    made = versions("torch", "transformers", "trl")
    sft_final = OUT / "trl_sft_healthy" / "final"
    if "trl_sft_healthy" in want:
        sft("trl_sft_healthy")
        record("trl_sft_healthy", made, None, [], {"phase": "sft"})
    if "trl_sft_lr_100x" in want:
        sft("trl_sft_lr_100x", lr=0.3)
        record("trl_sft_lr_100x", made, "learning_rate 0.3, 100x the healthy 3e-3",
               ["S3.1", "S3.2", "S4.1", "S1.2", "O22"], {"phase": "sft", "lr_max": "0.003"})
    if "trl_dpo_healthy" in want:
        dpo("trl_dpo_healthy", sft_final)
        record("trl_dpo_healthy", made, None, [], {"phase": "dpo"})
    if "trl_dpo_lr_100x" in want:
        dpo("trl_dpo_lr_100x", sft_final, lr=5e-2)
        record("trl_dpo_lr_100x", made, "learning_rate 5e-2, 100x the healthy 5e-4",
               ["L9", "S3.1", "S3.2", "S4.1"], {"phase": "dpo"})
    if "trl_dpo_lr_tiny" in want:
        dpo("trl_dpo_lr_tiny", sft_final, lr=5e-9)
        record("trl_dpo_lr_tiny", made, "learning_rate 5e-9: margins never move",
               ["L9", "O7"], {"phase": "dpo"})
    if "trl_grpo_healthy" in want:
        grpo("trl_grpo_healthy", sft_final)
        record("trl_grpo_healthy", made, None, [], {"phase": "grpo"})
    if "trl_grpo_lr_100x" in want:
        grpo("trl_grpo_lr_100x", sft_final, lr=1e-1)
        # The policy saturates the reward (every completion scores 1), so no group has reward
        # spread and the gradient dies: H3 names that, ahead of the grad-norm band it explains.
        record("trl_grpo_lr_100x", made, "learning_rate 1e-1, 100x the healthy 1e-3",
               ["R1", "R2", "S3.1", "S3.2", "H3"], {"phase": "grpo"})
    if "trl_reward_healthy" in want:
        reward("trl_reward_healthy")
        record("trl_reward_healthy", made, None, [], {},
               profile={"framework": "trl", "resumed_at": None, "init_checkpoint": False})
