# TRL GRPO on a tiny word-level GPT-2 that is first pretrained in this script.
# usage: trl_grpo_words.py RUNS NAME [fraction|length]
import os, sys, random, math
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
torch.set_num_threads(1)
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer
RUNS, NAME = sys.argv[1], sys.argv[2]
MODE = sys.argv[3] if len(sys.argv) > 3 else "fraction"
random.seed(0); torch.manual_seed(0)
GOOD = ["apple", "pear", "plum", "fig", "kiwi", "lime"]
BAD = ["rock", "sand", "mud", "dust", "ash", "tar"]
PROMPT = ["give", "me", "some", "fruit", "words", "please", "now"]
specials = ["<pad>", "<eos>", "<unk>", "<bos>"]
vocab = {w: i for i, w in enumerate(specials + PROMPT + GOOD + BAD)}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tk.decoder = decoders.WordPiece(prefix="##")  # joins word tokens with spaces
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", bos_token="<bos>")
tok.padding_side = "left"

def prompt():
    return " ".join(random.sample(PROMPT, 3))

# ---- stage 0: pretrain the tiny LM on prompt + 2..5 random content words + <eos>
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=vocab["<bos>"], eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(300):
    batch = []
    for _ in range(32):
        words = [random.choice(GOOD + BAD) for _ in range(random.randint(2, 5))]
        ids = tok(prompt() + " " + " ".join(words))["input_ids"] + [vocab["<eos>"]]
        batch.append(ids + [vocab["<pad>"]] * (12 - len(ids)))
    x = torch.tensor(batch)
    labels = x.clone(); labels[x == vocab["<pad>"]] = -100; labels[:, :3] = -100
    loss = model(input_ids=x, labels=labels).loss
    opt.zero_grad(); loss.backward(); opt.step()
print("pretrain loss", loss.item())
model.generation_config.eos_token_id = vocab["<eos>"]; model.generation_config.pad_token_id = vocab["<pad>"]

def reward_fruit_fraction(completions, **kw):
    out = []
    for c in completions:
        w = c.split()
        out.append(sum(x in GOOD for x in w) / max(len(w), 1))
    return out

def reward_fruit_count(completions, **kw):
    return [float(sum(x in GOOD for x in c.split())) for c in completions]

ds = Dataset.from_list([{"prompt": prompt()} for _ in range(2000)])
args = GRPOConfig(output_dir=os.path.join(RUNS, NAME), max_steps=int(os.environ.get("GRPO_STEPS", 40)), learning_rate=1e-3,
                  per_device_train_batch_size=16, num_generations=8, max_completion_length=int(os.environ.get("GRPO_MAXLEN", 32 if MODE == "fraction" else 16)),
                  temperature=1.0, logging_steps=1, save_strategy="steps", save_steps=20, save_total_limit=1,
                  report_to=["tensorboard"], seed=0, use_cpu=True, bf16=False, fp16=False, disable_tqdm=True,
                  dataloader_num_workers=0, warmup_steps=0, lr_scheduler_type="constant")
tr = GRPOTrainer(model=model, reward_funcs=reward_fruit_fraction if MODE == "fraction" else reward_fruit_count,
                 args=args, train_dataset=ds, processing_class=tok)
tr.train()
tr.save_model(os.path.join(RUNS, NAME))
h = [r for r in tr.state.log_history if "reward" in r]
L = [r["completions/mean_length"] for r in h]; R = [r["reward"] for r in h]
C = [r.get("completions/clipped_ratio", float("nan")) for r in h]
print("reward", R[0], R[-1], "len", L[0], L[-1], "clipped", C[0], C[-1])
if MODE == "fraction":
    assert sum(R[-5:]) / 5 > sum(R[:5]) / 5 + 0.15 and sum(C) / len(C) < 0.01 and max(L) < 16, (R, L, C)
