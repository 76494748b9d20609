# Healthy: tiny GPT-2 (fresh samples each epoch) on sequences from a fixed random Markov chain (entropy floor ~1.1 nats),
# HF Trainer logging once per epoch, 8 epochs, constant LR.
import os, sys, torch, numpy as np
torch.set_num_threads(1)
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
set_seed(0)
V, L = 32, 32
g = np.random.default_rng(1)
T = np.zeros((V, V))
for i in range(V):
    nxt = g.choice(V, 3, replace=False); T[i, nxt] = [0.5, 0.3, 0.2]
def seqs(n):
    x = np.zeros((n, L), dtype=np.int64); x[:, 0] = g.integers(0, V, n)
    for t in range(1, L):
        x[:, t] = [g.choice(V, p=T[s]) for s in x[:, t - 1]]
    return x
class DS(torch.utils.data.Dataset):
    # fixed=False: a fresh sequence is sampled on every access (streaming-style synthetic data)
    def __init__(s, n, fixed=True): s.n, s.fixed, s.x = n, fixed, seqs(n)
    def __len__(s): return s.n
    def __getitem__(s, i):
        t = torch.tensor(s.x[i] if s.fixed else seqs(1)[0]); return {"input_ids": t, "labels": t}
cfg = GPT2Config(vocab_size=V, n_positions=L, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, num_train_epochs=8,
                         learning_rate=float(os.environ.get("LR", 6e-3)), lr_scheduler_type="constant", logging_strategy="epoch",
                         eval_strategy="epoch", save_strategy="epoch", save_total_limit=2,
                         report_to=["tensorboard"], seed=0, use_cpu=True, disable_tqdm=True)
tr = Trainer(model=model, args=args, train_dataset=DS(480, fixed=False), eval_dataset=DS(96))
tr.train()
tr.save_model(out)
H = -(np.array([0.5, 0.3, 0.2]) * np.log([0.5, 0.3, 0.2])).sum()
print("entropy floor (nats)", H)
