"""PEFT LoRA with TRL's SFTTrainer: a tiny GPT-2 is first pretrained in-script (plain torch loop) on
'count' sequences that step by +1 (mod 10), saved to base_lm/; then a LoRA adapter (r=8 on c_attn,c_proj,c_fc)
is fine-tuned on sequences that step by +3."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import numpy as np
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(0)
DIG = ["d%d" % i for i in range(10)]
STEPS = ["s%d" % i for i in range(1, 10)]
tok = common.word_tokenizer(["count", "by"] + STEPS + DIG)
rng = np.random.default_rng(0)


def seqs(n, step, noise=0.0):
    out = []
    for _ in range(n):
        a, L = int(rng.integers(0, 10)), int(rng.integers(6, 14))
        xs = [(a + step * i) % 10 for i in range(L)]
        out.append("[BOS] count " + " ".join(DIG[x] for x in xs) + " [EOS]")
    return out


cfg = GPT2Config(vocab_size=len(tok), n_positions=32, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
base = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
for it in range(200):
    b = tok(seqs(32, 1), return_tensors="pt", padding=True)
    loss = base(**b, labels=b["input_ids"].masked_fill(b["attention_mask"] == 0, -100)).loss
    opt.zero_grad(); loss.backward(); opt.step()
print("pretrain final loss", loss.item())
base_dir = os.path.join(out, "base_lm")
base.save_pretrained(base_dir); tok.save_pretrained(base_dir)

train = Dataset.from_dict({"text": seqs(2000, 3)})
evals = Dataset.from_dict({"text": seqs(200, 3)})
model = GPT2LMHeadModel.from_pretrained(base_dir)
lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["c_attn", "c_proj", "c_fc"],
                  task_type="CAUSAL_LM", fan_in_fan_out=True)
args = SFTConfig(output_dir=out, per_device_train_batch_size=32, learning_rate=5e-3, lr_scheduler_type="cosine",
                 warmup_steps=10, num_train_epochs=2, logging_steps=5, eval_strategy="steps", eval_steps=25,
                 save_strategy="steps", save_steps=50, save_total_limit=2, report_to=["tensorboard"],
                 use_cpu=True, seed=0, max_length=32, dataset_text_field="text", packing=False)
trainer = SFTTrainer(model=model, args=args, train_dataset=train, eval_dataset=evals, processing_class=tok,
                     peft_config=lora)
trainer.model.print_trainable_parameters()
trainer.train()
trainer.save_model(os.path.join(out, "final_adapter"))
for r in trainer.state.log_history:
    if "eval_loss" in r:
        print(r["step"], round(r["eval_loss"], 4), round(r.get("eval_mean_token_accuracy", -1), 4))
