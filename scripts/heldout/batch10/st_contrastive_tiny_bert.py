# HEALTHY: sentence-transformers contrastive fine-tuning (MultipleNegativesRankingLoss) of a tiny BERT built from a
# config with a local word-level vocab. Pairs are (sentence, paraphrase) from a synthetic grammar; warmup + linear decay.
import os, sys, random
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_DISABLED="true"); os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
torch.set_num_threads(1)
from transformers import BertConfig, BertModel, BertTokenizerFast
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments, losses, models
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
random.seed(0); torch.manual_seed(0)
subj = [f"s{i}" for i in range(30)]; verb = [f"v{i}" for i in range(20)]; obj = [f"o{i}" for i in range(30)]
syn = {w: w + "x" for w in subj + verb + obj}            # each word has one synonym
fill = ["the", "a", "very", "quickly", "today", "and", "then"]
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + fill + list(syn) + list(syn.values())
base = os.path.join(out, "init_model"); os.makedirs(base, exist_ok=True)
tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
tok.save_pretrained(base)
cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, max_position_embeddings=32)
BertModel(cfg).save_pretrained(base)
def sent():
    return [random.choice(subj), random.choice(verb), random.choice(obj)]
def render(ws, para):
    ws = [syn[w] if para and random.random() < 0.5 else w for w in ws]
    f = random.sample(fill, 2)
    return " ".join([f[0], ws[0], ws[1], f[1], ws[2]])
def pairs(n):
    a, p = [], []
    for _ in range(n):
        ws = sent(); a.append(render(ws, False)); p.append(render(ws, True))
    return Dataset.from_dict({"anchor": a, "positive": p})
train, val = pairs(4000), pairs(300)
word = models.Transformer(base, max_seq_length=16)
model = SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension(), "mean")], device="cpu")
qs = {str(i): val["anchor"][i] for i in range(len(val))}; docs = {str(i): val["positive"][i] for i in range(len(val))}
ir = InformationRetrievalEvaluator(qs, docs, {k: {k} for k in qs}, name="val", mrr_at_k=[10], ndcg_at_k=[10], accuracy_at_k=[1], precision_recall_at_k=[10], map_at_k=[10])
args = SentenceTransformerTrainingArguments(output_dir=os.path.join(out, "checkpoints"), num_train_epochs=3, per_device_train_batch_size=64,
    learning_rate=5e-4, warmup_ratio=0.1, lr_scheduler_type="linear", logging_steps=5, eval_strategy="steps", eval_steps=50,
    save_strategy="steps", save_steps=50, save_total_limit=4, seed=0, report_to=["tensorboard"],
    use_cpu=True, dataloader_num_workers=0)
trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                                     loss=losses.MultipleNegativesRankingLoss(model), evaluator=ir)
trainer.train()
model.save(os.path.join(out, "final_model"))
