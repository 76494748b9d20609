# Healthy: tiny BERT "pretrained" with MLM (saved to OUT/init/), then fine-tuned with a new
# classification head via HF Trainer, which writes checkpoint-N/ folders into OUT.
import os, sys, torch, numpy as np
torch.set_num_threads(1)
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification,
                          Trainer, TrainingArguments, set_seed)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
set_seed(0)
V, L = 300, 24
cfg = BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128, max_position_embeddings=64)
g = np.random.default_rng(0)
def make(n):
    y = g.integers(0, 2, n)
    x = np.where(y[:, None] == 0, g.integers(5, 170, (n, L)), g.integers(130, 295, (n, L)))
    x[:, 0] = 2  # CLS
    return x, y
# --- pretraining step (MLM) -> OUT/init
mlm = BertForMaskedLM(cfg)
opt = torch.optim.AdamW(mlm.parameters(), lr=1e-3)
px, _ = make(512)
for step in range(40):
    xb = torch.tensor(px[(step * 32) % 512:(step * 32) % 512 + 32])
    labels = xb.clone(); m = torch.rand(xb.shape) < 0.15
    labels[~m] = -100; inp = xb.clone(); inp[m] = 1
    loss = mlm(input_ids=inp, labels=labels).loss
    loss.backward(); opt.step(); opt.zero_grad()
mlm.save_pretrained(os.path.join(out, "init"))
print("pretrain final mlm loss", loss.item())
# --- fine-tune with a new head
class DS(torch.utils.data.Dataset):
    def __init__(s, n): s.x, s.y = make(n)
    def __len__(s): return len(s.y)
    def __getitem__(s, i): return {"input_ids": torch.tensor(s.x[i]), "labels": int(s.y[i])}
model = BertForSequenceClassification.from_pretrained(os.path.join(out, "init"), num_labels=2)
args = TrainingArguments(output_dir=out, per_device_train_batch_size=32, per_device_eval_batch_size=64,
                         num_train_epochs=3, learning_rate=5e-4, warmup_steps=10, logging_steps=5,
                         eval_strategy="steps", eval_steps=20, save_strategy="steps", save_steps=40,
                         report_to=["tensorboard"], seed=0, use_cpu=True, dataloader_num_workers=0,
                         disable_tqdm=True)
def metrics(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}
tr = Trainer(model=model, args=args, train_dataset=DS(640), eval_dataset=DS(256), compute_metrics=metrics)
tr.train()
print(tr.evaluate())
