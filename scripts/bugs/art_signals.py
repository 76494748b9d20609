"""Signature corpus for the issue-20 probes: tiny real PyTorch runs on CPU (seconds each),
each with one bug whose artifacts carry an entry's signature, beside a healthy twin.

art_bn_eval_train_mode (O5)  conv+BatchNorm net; validation runs without model.eval(), and
                             the script saves the model again after validating (same step)
art_bn_eval_healthy          the same with model.eval() around validation
art_data_wait (T1)           Dataset.__getitem__ decodes per sample (a sleep), num_workers=0;
                             mmengine-style JSONL with data_time and time per iteration
art_data_wait_healthy        the same data pre-decoded once before training
art_nan_lr_ramp (F22)        an LR that keeps ramping (no decay): the grad norm climbs for
                             hundreds of steps, then the loss goes inf/NaN (fp32)
art_fp16_overflow (P1)       fp16 autocast + GradScaler: from step 200 a data source arrives
                             un-normalised, the forward overflows 65504, the loss is inf/NaN
art_fp16_healthy             the same fp16 run with every input normalised
art_finetune_shared_lr (O19) a pretrained backbone plus a new head, one AdamW group at 1e-3
art_finetune_two_groups      backbone 2e-5, head 1e-3 in two groups
art_sft_pad_is_eos (G1)      a tiny GPT-2 SFT with pad = EOS and DataCollatorForLanguageModeling:
                             every EOS is masked out of the labels (batch dump)
art_sft_dedicated_pad        the same with a dedicated <pad> token
art_memory_leak (M2)         logits appended to a list with their graph; RSS logged (CPU)
art_memory_flat              the same keeping only detached argmax
art_eval_random_transform (V2) the eval loader reuses the random crop + flip; the first eval
                             batch is dumped every epoch
art_eval_center_crop         a deterministic center crop for evaluation
art_det_unscaled_eval (V3)   a one-box regressor predicting normalised xyxy, scored against
                             pixel boxes (mAP50 exactly 0 at every evaluation)
art_det_scaled_eval          predictions scaled back to pixels before scoring
art_t2i_no_caption_drop (DF5) a toy text-conditioned denoiser, captions never emptied;
                             four batches of latents + CLIP caption ids dumped
art_t2i_caption_drop         10% of captions replaced by the empty prompt
art_trl_dpo_on_sft_data (L8) TRL's DPOTrainer given the SFT stage's prompt/completion rows: the
                             job's captured log ends in KeyError: 'chosen'
art_trl_dpo_on_pairs         the same 20-step DPO run on preference pairs
art_vlm_no_image_token (X5)  a toy LLaVA-style model whose template drops <image>: pixel_values
                             are fed, no row holds a placeholder, the LM answers from text alone
art_vlm_image_token          the same with the four placeholders per image
Writes under tests/bugs/art/<run>/ and merges tests/bugs/art/answers.json.
Usage: /work/venv-field/bin/python scripts/bugs/art_signals.py [run ...]
"""
import json, math, os, shutil, sys, time

import torch
from safetensors.torch import save_file
from torch.utils.tensorboard import SummaryWriter

torch.set_num_threads(1)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "bugs", "art")


def fresh(name):
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return out


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, path)


# ---- O5: evaluation in train mode ------------------------------------------------------
def bn_eval(name, eval_mode):
    torch.manual_seed(0)
    out = fresh(name)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    x = torch.randn(256, 3, 8, 8)
    y = (x[:, 0].mean((1, 2)) > 0).long() + 2 * (x[:, 1].mean((1, 2)) > 0).long()
    xv = torch.randn(64, 3, 8, 8) * 1.5 + 0.3  # validation images differ in statistics
    w = SummaryWriter(out)
    step = 0
    for epoch in range(2):
        net.train()
        for i in range(0, 256, 32):
            step += 1
            loss = torch.nn.functional.cross_entropy(net(x[i:i + 32]), y[i:i + 32])
            opt.zero_grad(); loss.backward(); opt.step()
            w.add_scalar("train/loss", loss.item(), step)
        save(net, os.path.join(out, f"step_{step}", "model.safetensors"))
        if eval_mode:
            net.eval()
        with torch.no_grad():
            for i in range(0, 64, 16):
                net(xv[i:i + 16])
        # "save the model we just validated" — same step, after the validation pass
        save(net, os.path.join(out, f"step_{step}_validated", "model.safetensors"))
    w.close()


# ---- T1: data-bound steps ---------------------------------------------------------------
class SlowSet(torch.utils.data.Dataset):
    def __init__(self, n, slow):
        self.x = torch.randn(n, 32)
        self.y = (self.x.sum(1) > 0).long()
        self.slow = slow

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.slow:
            time.sleep(0.002)  # per-sample decode / augmentation on the main process
        return self.x[i], self.y[i]


def data_wait(name, slow):
    torch.manual_seed(0)
    out = fresh(name)
    net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    dl = torch.utils.data.DataLoader(SlowSet(1024, slow), batch_size=16, shuffle=True, num_workers=0)
    with open(os.path.join(out, "log.jsonl"), "w") as f:
        step = 0
        for epoch in range(2):
            t0 = time.perf_counter()
            for xb, yb in dl:
                t1 = time.perf_counter()
                step += 1
                loss = torch.nn.functional.cross_entropy(net(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
                # some real compute per step, as a GPU step would take
                for _ in range(3):
                    torch.mm(torch.randn(192, 192), torch.randn(192, 192))
                t2 = time.perf_counter()
                if step % 5 == 0:
                    f.write(json.dumps({"step": step, "loss": loss.item(), "lr": 1e-3,
                                        "data_time": t1 - t0, "time": t2 - t0}) + "\n")
                t0 = time.perf_counter()


# ---- F22: an LR that keeps ramping until the run diverges -------------------------------
def nan_ramp(name):
    torch.manual_seed(0)
    out = fresh(name)
    net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    x = torch.randn(512, 16)
    y = x[:, :1] * 2.0 + 0.1 * torch.randn(512, 1)
    w = SummaryWriter(out)
    for step in range(1, 801):
        lr = 1e-3 * 1.012 ** step  # "warm-up" with no end
        for g in opt.param_groups:
            g["lr"] = lr
        i = (step * 32) % 512
        loss = torch.nn.functional.mse_loss(net(x[i:i + 32]), y[i:i + 32])
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
        opt.step()
        if step % 5 == 0:
            w.add_scalar("train/loss", loss.item(), step)
            w.add_scalar("train/grad_norm", gn.item(), step)
            w.add_scalar("train/learning_rate", lr, step)
        if not math.isfinite(loss.item()) and step > 5:
            # the user's loop keeps logging a few steps, then stops
            if step % 5 != 0:
                w.add_scalar("train/loss", loss.item(), step)
            break
    w.close()


# ---- P1: fp16 forward overflow ---------------------------------------------------------
def fp16(name, overflow):
    torch.manual_seed(0)
    out = fresh(name)
    net = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                              torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cpu")
    x = torch.randn(2048, 64)
    y = (x[:, :10].argmax(1))
    w = SummaryWriter(out)
    for step in range(1, 401):
        i = (step * 32) % 2048
        xb = x[i:i + 32]
        if overflow and step >= 200:
            # a second data source joins the mixture without the normalisation step: raw
            # feature values in the thousands
            xb = xb * 4000.0
        with torch.autocast("cpu", dtype=torch.float16):
            logits = net(xb)
            loss = torch.nn.functional.cross_entropy(logits, y[i:i + 32])
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        scaler.step(opt); scaler.update()
        if step % 5 == 0:
            w.add_scalar("train/loss", loss.item(), step)
            w.add_scalar("train/grad_norm", gn.item(), step)
            w.add_scalar("train/loss_scale", scaler.get_scale(), step)
    w.close()


# ---- O19: one high LR for a pretrained backbone and a new head --------------------------
def finetune(name, shared):
    torch.manual_seed(0)
    out = fresh(name)
    backbone = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.LayerNorm(128),
                                   torch.nn.Linear(128, 128), torch.nn.GELU())
    # "pretraining": a regression task on the same inputs
    x = torch.randn(1024, 32)
    pre_head = torch.nn.Linear(128, 8)
    popt = torch.optim.AdamW(list(backbone.parameters()) + list(pre_head.parameters()), lr=1e-3)
    for i in range(300):
        xb = x[(i * 64) % 1024:(i * 64) % 1024 + 64]
        loss = torch.nn.functional.mse_loss(pre_head(backbone(xb)), xb[:, :8].sin())
        popt.zero_grad(); loss.backward(); popt.step()
    model = torch.nn.Sequential()
    model.add_module("backbone", backbone)
    model.add_module("classifier", torch.nn.Linear(128, 4))  # the new head
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    def split(mod, lr):  # decay for matrices, none for biases / norms
        ps = list(mod.parameters())
        return [{"params": [p for p in ps if p.ndim >= 2], "lr": lr, "weight_decay": 0.01},
                {"params": [p for p in ps if p.ndim < 2], "lr": lr, "weight_decay": 0.0}]
    if shared:
        opt = torch.optim.AdamW(split(model, 1e-3))
    else:
        opt = torch.optim.AdamW(split(model.backbone, 2e-5) + split(model.classifier, 1e-3))
    w = SummaryWriter(out)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("# tiny-cls\n\nThis model is a fine-tuned version of [tiny-backbone](https://example.org/tiny-backbone) on a toy dataset.\n")
    for step in range(1, 201):
        i = (step * 32) % 1024
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 5 == 0:
            w.add_scalar("train/loss", loss.item(), step)
            w.add_scalar("train/grad_norm", gn.item(), step)
        if step in (100, 200):
            ck = os.path.join(out, f"checkpoint-{step}")
            save(model, os.path.join(ck, "model.safetensors"))
            torch.save(opt.state_dict(), os.path.join(ck, "optimizer.pt"))
    w.close()


# ---- G1: pad = EOS, so the collator masks every EOS out of the labels -------------------
def sft_eos(name, pad_is_eos):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                              PreTrainedTokenizerFast)
    torch.manual_seed(0)
    out = fresh(name)
    words = ("question answer what who where sat ran slept the a cat dog bird on in to mat "
             "park tree big small red blue").split()
    vocab = {"<unk>": 0, "<eos>": 1, "<bos>": 2}
    if not pad_is_eos:
        vocab["<pad>"] = 3
    for w in words:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>",
                                  bos_token="<bos>")
    if pad_is_eos:
        tok.pad_token = tok.eos_token  # the usual one-liner
    else:
        tok.pad_token = "<pad>"
    subj = ["the cat", "a dog", "the bird", "a cat"]
    verb = ["sat", "ran", "slept"]
    place = ["on the mat", "in the park", "in a tree", "on a big mat", "to the red tree"]
    texts = []
    for i in range(64):
        s, v, p = subj[i % 4], verb[i % 3], place[i % 5]
        texts.append(f"question who {v} answer {s} {v} {p} <eos>")
    enc = [tok(t) for t in texts]
    if pad_is_eos:
        col = DataCollatorForLanguageModeling(tok, mlm=False)
    else:
        answer = vocab["answer"]

        def col(rows):  # completion-only: prompt (through "answer") and pads masked
            b = tok.pad(rows, return_tensors="pt")
            labels = b["input_ids"].clone()
            labels[b["attention_mask"] == 0] = -100
            for r in range(labels.shape[0]):
                k = (b["input_ids"][r] == answer).nonzero()[0, 0]
                labels[r, : k + 1] = -100
            b["labels"] = labels
            return b
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=2, eos_token_id=1, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = SummaryWriter(out)
    for step in range(1, 121):
        i = (step * 8) % 64
        batch = col(enc[i:i + 8])
        loss = model(**batch).loss
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 5 == 0 or step == 1:
            w.add_scalar("train/loss", loss.item(), step)
            w.add_scalar("train/grad_norm", gn.item(), step)
        if step == 1:
            save_file({k: v.contiguous() for k, v in batch.items()}, os.path.join(out, "batch.safetensors"))
    model.save_pretrained(os.path.join(out, "checkpoint-120"), safe_serialization=True)
    w.close()


# ---- M2: outputs kept with their graph every step ---------------------------------------
def leak(name, leaking):
    # In a fresh process: the resident set of this one carries the other runs.
    import subprocess
    subprocess.run([sys.executable, __file__, "--leak-child", name, "1" if leaking else "0"],
                   check=True)


def leak_child(name, leaking):
    torch.manual_seed(0)
    out = fresh(name)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1000))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(4096, 64)
    y = torch.randint(0, 1000, (4096,))
    page = os.sysconf("SC_PAGE_SIZE")
    kept = []
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        for step in range(1, 401):
            i = (step * 128) % 4096
            logits = net(x[i:i + 128])
            loss = torch.nn.functional.cross_entropy(logits, y[i:i + 128])
            opt.zero_grad(); loss.backward(); opt.step()
            # "keep the predictions for the epoch's accuracy"
            kept.append(logits if leaking else logits.detach().argmax(1))
            if step % 10 == 0:
                rss = int(open("/proc/self/statm").read().split()[1]) * page / 2**20
                f.write(json.dumps({"step": step, "loss": loss.item(), "memory/rss_mb": rss}) + "\n")


# ---- V2: the eval loader reuses the random training transform --------------------------
def eval_aug(name, random_eval):
    torch.manual_seed(0)
    out = fresh(name)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 3, 16, 16, generator=g)
    y = torch.arange(256) % 4
    x[:, 0] += (y.float() - 1.5)[:, None, None]  # learnable: class shifts channel 0
    xv, yv = x[:64].clone(), y[:64].clone()

    def train_tf(b):  # random 12x12 crop + random horizontal flip
        i, j = torch.randint(0, 5, (2,)).tolist()
        b = b[:, :, i:i + 12, j:j + 12]
        return b.flip(-1) if torch.rand(()) < 0.5 else b

    def eval_tf(b):
        return train_tf(b) if random_eval else b[:, :, 2:14, 2:14]
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    w = SummaryWriter(out)
    step = 0
    for epoch in range(1, 4):
        for i in range(0, 256, 32):
            step += 1
            loss = torch.nn.functional.cross_entropy(net(train_tf(x[i:i + 32])), y[i:i + 32])
            opt.zero_grad(); loss.backward(); opt.step()
            w.add_scalar("train/loss", loss.item(), step)
        with torch.no_grad():
            xb = eval_tf(xv[:16])
            acc = (net(eval_tf(xv)).argmax(1) == yv).float().mean().item()
        w.add_scalar("eval/accuracy", acc, step)
        save_file({"pixel_values": xb.contiguous(), "labels": yv[:16].clone()},
                  os.path.join(out, f"eval_batch_epoch{epoch}.safetensors"))
    w.close()


# ---- V3: predictions in [0, 1] scored against pixel boxes ------------------------------
def det_eval(name, unscaled):
    torch.manual_seed(0)
    out = fresh(name)
    g = torch.Generator().manual_seed(2)
    n, S = 512, 32
    x1 = torch.randint(6, 18, (n,), generator=g)
    y1 = torch.randint(6, 18, (n,), generator=g)
    wh = torch.randint(6, 12, (n, 2), generator=g)
    boxes = torch.stack([x1, y1, x1 + wh[:, 0], y1 + wh[:, 1]], 1).float()  # xyxy pixels
    img = torch.zeros(n, 1, S, S)
    for k in range(n):
        a, b, c, d = boxes[k].long().tolist()
        img[k, 0, b:d, a:c] = 1.0
    img += 0.1 * torch.randn(img.shape, generator=g)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(S * S, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 4), torch.nn.Sigmoid())  # normalised xyxy

    def iou(p, t):
        lt = torch.maximum(p[:, :2], t[:, :2]); rb = torch.minimum(p[:, 2:], t[:, 2:])
        inter = (rb - lt).clamp(min=0).prod(1)
        area = lambda b: (b[:, 2:] - b[:, :2]).clamp(min=0).prod(1)
        return inter / (area(p) + area(t) - inter + 1e-9)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    w = SummaryWriter(out)
    for step in range(1, 301):
        i = (step * 32) % (n - 64)
        loss = torch.nn.functional.smooth_l1_loss(net(img[i:i + 32]), boxes[i:i + 32] / S)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            w.add_scalar("train/loss", loss.item(), step)
        if step % 50 == 0:
            with torch.no_grad():
                pred = net(img[-64:])
                if not unscaled:
                    pred = pred * S  # back to pixels, as the targets are
                hits = (iou(pred, boxes[-64:]) >= 0.5).float()
            # one object and one scored prediction per image: AP@0.5 is the hit rate
            w.add_scalar("eval/mAP50", hits.mean().item(), step)
    w.close()


# ---- DF5: captions never dropped in a text-conditioned denoiser --------------------------
def t2i(name, drop):
    torch.manual_seed(0)
    out = fresh(name)
    g = torch.Generator().manual_seed(3)
    BOS, EOS = 49406, 49407
    words = [320, 1125, 539, 2368, 4558, 786, 1929, 6531]
    class Den(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(49408, 16)
            self.net = torch.nn.Sequential(torch.nn.Linear(64 + 16 + 1, 128), torch.nn.SiLU(),
                                           torch.nn.Linear(128, 64))

        def forward(self, z, t, ids):
            c = self.emb(ids).mean(1)
            return self.net(torch.cat([z.flatten(1), c, t[:, None]], 1)).view_as(z)
    model = Den()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = SummaryWriter(out)
    for step in range(1, 201):
        ids = torch.full((16, 8), EOS)
        ids[:, 0] = BOS
        for r in range(16):
            k = int(torch.randint(2, 5, (1,), generator=g))
            ids[r, 1:1 + k] = torch.tensor(words)[torch.randint(0, 8, (k,), generator=g)]
        if drop:  # --proportion_empty_prompts 0.1: the empty caption is BOS EOS EOS ...
            empty = torch.rand(16, generator=g) < 0.1
            ids[empty, 1:] = EOS
        z0 = torch.randn(16, 4, 4, 4, generator=g) * 0.9 + ids[:, 1:2, None, None].float() / 49408
        t = torch.rand(16, generator=g)
        noise = torch.randn(z0.shape, generator=g)
        zt = (1 - t)[:, None, None, None].sqrt() * z0 + t[:, None, None, None].sqrt() * noise
        loss = torch.nn.functional.mse_loss(model(zt, t, ids), noise)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            w.add_scalar("train/loss", loss.item(), step)
        if step in (50, 100, 150, 200):
            save_file({"latents": z0.contiguous(), "input_ids": ids.contiguous()},
                      os.path.join(out, f"batch_step{step}.safetensors"))
    w.close()


# ---- L8: an SFT dataset handed to TRL's DPOTrainer ----------------------------------------
TRL_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from trl_runs import tokenizer, base_model, words, common_args, prefs
from common import markov
from datasets import Dataset
from trl import DPOConfig, DPOTrainer
out, wrong = sys.argv[2], sys.argv[3] == "1"
if wrong:  # the prompt/completion rows the SFT stage used
    rows = markov(320, 24, seed=1)
    ds = Dataset.from_dict({"prompt": [words(r[:12]) for r in rows],
                            "completion": [" " + words(r[12:]) for r in rows]})
else:
    ds = prefs(320, seed=5)
import tempfile
from transformers import GPT2LMHeadModel
base = tempfile.mkdtemp()  # the SFT stage's model, saved, as DPO starts from a path
base_model().save_pretrained(base)
args = DPOConfig(**common_args(out, max_steps=20, learning_rate=5e-4, beta=0.1, max_length=32,
                               per_device_train_batch_size=8, logging_steps=2, save_steps=20,
                               warmup_steps=2))
DPOTrainer(model=GPT2LMHeadModel.from_pretrained(base), args=args, train_dataset=ds,
           processing_class=tokenizer()).train()
"""


def trl_schema(name, wrong):
    import subprocess
    out = fresh(name)
    field = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "field")
    with open(os.path.join(out, "train.log"), "w") as log:  # python train.py 2>&1 | tee train.log
        subprocess.run([sys.executable, "-c", TRL_CHILD, field, out, "1" if wrong else "0"],
                       stdout=log, stderr=subprocess.STDOUT, check=False)


# ---- X5: the chat template drops the <image> placeholder -------------------------------
def toy_vlm(name, with_placeholder):
    torch.manual_seed(0)
    out = fresh(name)
    g = torch.Generator().manual_seed(4)
    words = ["<pad>", "<eos>", "<bos>", "<image>", "user", "assistant", "what", "color", "is", "it",
             "red", "green", "blue"]
    vocab = {w: i for i, w in enumerate(words)}
    IMG, K = vocab["<image>"], 4  # each image becomes K placeholder tokens
    colors = ["red", "green", "blue"]

    class VLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vision = torch.nn.Linear(3 * 4 * 4, 32)     # one feature per 4x4 patch
            self.projector = torch.nn.Linear(32, 32)
            self.embed = torch.nn.Embedding(len(words), 32)
            self.lm = torch.nn.GRU(32, 64, batch_first=True)
            self.head = torch.nn.Linear(64, len(words))

        def forward(self, input_ids, pixel_values):
            b = pixel_values.shape[0]
            patches = pixel_values.unfold(2, 4, 4).unfold(3, 4, 4)      # b,3,2,2,4,4
            patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, K, 48)
            feats = self.projector(self.vision(patches))
            h = self.embed(input_ids)
            mask = input_ids == IMG
            # the image features go where the placeholders are; none, and they go nowhere
            h = h.masked_scatter(mask[..., None], feats[mask.sum(1) > 0].reshape(-1, 32)[: int(mask.sum())])
            return self.head(self.lm(h)[0])

    def batch(n):
        c = torch.randint(0, 3, (n,), generator=g)
        px = 0.8 * torch.randn(n, 3, 8, 8, generator=g)
        px[torch.arange(n), c] += 0.5  # the image's color channel is brighter
        px = (px - 0.5 / 3) / 0.95  # normalised with the dataset's mean / std
        rows, labels = [], []
        for k in range(n):
            user = ["user"] + (["<image>"] * K if with_placeholder else []) + ["what", "color", "is", "it"]
            ids = [vocab["<bos>"]] + [vocab[w] for w in user] + [vocab["assistant"], vocab[colors[int(c[k])]], vocab["<eos>"]]
            ids += [0] * (13 - len(ids))
            lab = [-100] * len(ids)
            j = ids.index(vocab["assistant"])
            lab[j + 1], lab[j + 2] = ids[j + 1], ids[j + 2]
            rows.append(ids); labels.append(lab)
        ids = torch.tensor(rows)
        return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": torch.tensor(labels),
                "pixel_values": px}
    model = VLM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = SummaryWriter(out)
    for step in range(1, 151):
        b = batch(32)
        logits = model(b["input_ids"], b["pixel_values"])
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, len(words)),
                                                 b["labels"][:, 1:].reshape(-1), ignore_index=-100)
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 5 == 0 or step == 1:
            w.add_scalar("train/loss", loss.item(), step)
            w.add_scalar("train/grad_norm", gn.item(), step)
        if step == 1:
            save_file({k: v.contiguous() for k, v in b.items()}, os.path.join(out, "batch.safetensors"))
    w.close()
    json.dump({"model_type": "llava", "architectures": ["ToyVLM"], "image_token_id": IMG,
               "image_seq_length": K, "vision_config": {"hidden_size": 32, "patch_size": 4},
               "text_config": {"vocab_size": len(words)}, "pad_token_id": 0, "eos_token_id": 1,
               "bos_token_id": 2}, open(os.path.join(out, "config.json"), "w"), indent=1)


RUNS = {
    "art_bn_eval_train_mode": (lambda n: bn_eval(n, False), ["O5"], "validation without model.eval(): BatchNorm running stats updated by eval batches", {}),
    "art_bn_eval_healthy": (lambda n: bn_eval(n, True), [], None, {}),
    "art_data_wait": (lambda n: data_wait(n, True), ["T1"], "per-sample work in __getitem__ with num_workers=0", {}),
    "art_data_wait_healthy": (lambda n: data_wait(n, False), [], None, {}),
    "art_nan_lr_ramp": (nan_ramp, ["F22", "S2.1", "S2.2", "L6"], "LR ramps without end until the loss diverges", {"precision": "fp32"}),
    "art_fp16_overflow": (lambda n: fp16(n, True), ["P1"], "fp16 autocast: un-normalised inputs from step 200 overflow 65504 in the forward", {}),
    "art_fp16_healthy": (lambda n: fp16(n, False), [], None, {}),
    "art_finetune_shared_lr": (lambda n: finetune(n, True), ["O19"], "pretrained backbone and new head in one AdamW group at lr 1e-3", {}),
    "art_finetune_two_groups": (lambda n: finetune(n, False), [], None, {}),
    "art_sft_pad_is_eos": (lambda n: sft_eos(n, True), ["G1", "L3"], "tokenizer.pad_token = tokenizer.eos_token with DataCollatorForLanguageModeling: every EOS masked to -100", {"phase": "sft"}),
    "art_sft_dedicated_pad": (lambda n: sft_eos(n, False), [], None, {"phase": "sft"}),
    "art_memory_leak": (lambda n: leak(n, True), ["M2"], "logits kept in a list with their graph every step", {}),
    "art_memory_flat": (lambda n: leak(n, False), [], None, {}),
    "art_eval_random_transform": (lambda n: eval_aug(n, True), ["V2"], "the eval loader reuses the random crop + flip of training", {}),
    "art_eval_center_crop": (lambda n: eval_aug(n, False), [], None, {}),
    "art_det_unscaled_eval": (lambda n: det_eval(n, True), ["V3"], "normalised box predictions scored against pixel targets: mAP 0 at every evaluation", {}),
    "art_det_scaled_eval": (lambda n: det_eval(n, False), [], None, {}),
    "art_t2i_no_caption_drop": (lambda n: t2i(n, False), ["DF5"], "captions never dropped to the empty prompt", {}),
    "art_t2i_caption_drop": (lambda n: t2i(n, True), [], None, {}),
    "art_trl_dpo_on_sft_data": (lambda n: trl_schema(n, True), ["L8"], "prompt/completion SFT rows given to DPOTrainer", {}),
    "art_trl_dpo_on_pairs": (lambda n: trl_schema(n, False), [], None, {}),
    "art_vlm_no_image_token": (lambda n: toy_vlm(n, False), ["X5"], "the chat template drops the <image> entry: images fed, no placeholder, the LM trains on text alone", {}),
    "art_vlm_image_token": (lambda n: toy_vlm(n, True), [], None, {}),
}

if __name__ == "__main__":
    if sys.argv[1:2] == ["--leak-child"]:
        leak_child(sys.argv[2], sys.argv[3] == "1")
        sys.exit(0)
    names = sys.argv[1:] or list(RUNS)
    ans_path = os.path.join(ROOT, "answers.json")
    ans = json.load(open(ans_path)) if os.path.exists(ans_path) else {}
    for n in names:
        fn, accept, bug, facts = RUNS[n]
        fn(n)
        ans[n] = {"accept": accept, "facts": facts, "bug": bug, "made_by": {"torch": torch.__version__}}
        print(n, "written")
    json.dump(ans, open(ans_path, "w"), indent=2, sort_keys=True)
