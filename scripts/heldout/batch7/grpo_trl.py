"""TRL GRPO on a tiny Qwen2 built from config, character-level tokenizer, python reward.

Task: after a prompt like "cbda:", write a short run of the letter 'a' and stop.
reward = min(#a, 6)/6 - 0.1 * max(0, len(completion) - 8)   (length penalty)
variants: healthy | length_bonus (the length-penalty sign is flipped, so every extra
character past 8 is rewarded and completions run to max_completion_length).
Layout: what GRPOTrainer writes (runs/<date>/events.out.tfevents.*, checkpoint-N/ with
trainer_state.json, final model + tokenizer, README.md) plus train.log (stdout).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, fresh_dir, tee_output  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--variant", default="healthy", choices=["healthy", "length_bonus"])
args = p.parse_args()
setup(0)
out = fresh_dir(args.out)
tee_output(os.path.join(out, "train.log"))

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402


chars = list("abcdefgh:")
vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2}
for c in chars:
    vocab[c] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
tk.decoder = decoders.Fuse()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<eos>", pad_token="<pad>", bos_token="<bos>")

cfg = Qwen2Config(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  eos_token_id=1, pad_token_id=0, bos_token_id=2, tie_word_embeddings=True)
model = Qwen2ForCausalLM(cfg)

g = torch.Generator().manual_seed(0)
prompts = ["".join(chars[i] for i in torch.randint(0, 8, (4,), generator=g).tolist()) + ":" for _ in range(256)]
ds = Dataset.from_dict({"prompt": prompts})

MAX_LEN = 24
# the one-character difference between the two runs:
LENGTH_COEF = -0.1 if args.variant == "healthy" else +0.1


def a_run_reward(completions, **kwargs):
    return [min(c.count("a"), 6) / 6.0 + LENGTH_COEF * max(0, len(c) - 8) for c in completions]


targs = GRPOConfig(
    output_dir=out, per_device_train_batch_size=16, num_generations=8, max_completion_length=MAX_LEN,
    learning_rate=3e-3, lr_scheduler_type="linear", max_steps=80, logging_steps=2,
    save_strategy="steps", save_steps=40, save_total_limit=2, use_cpu=True, report_to=["tensorboard"],
    seed=0, beta=0.0, temperature=1.0, bf16=False, disable_tqdm=True,
)
trainer = GRPOTrainer(model=model, reward_funcs=[a_run_reward], args=targs, train_dataset=ds,
                      processing_class=tok)
trainer.train()
trainer.save_model(out)

