"""Check, from the files each run wrote (not from the scripts), that healthy runs learned and
that each injected bug shows. usage: verify.py OUT  -> prints one line per run, exit 1 on failure."""
import csv
import glob
import json
import math
import os
import sys

import numpy as np
import torch

OUT = sys.argv[1]
failures = []


def check(name, cond, msg):
    print(f"{'ok  ' if cond else 'FAIL'} {name}: {msg}")
    if not cond:
        failures.append(name)


def tb_scalars(path_glob, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    vals = []
    for f in sorted(glob.glob(path_glob, recursive=True)):
        ea = EventAccumulator(f, size_guidance={"scalars": 0})
        ea.Reload()
        if tag in ea.Tags()["scalars"]:
            vals += [(e.step, e.value) for e in ea.Scalars(tag)]
    return vals


def mean(xs):
    return sum(xs) / len(xs)


# ---- torchvision Faster R-CNN
for name, healthy in [("frcnn_rects_2", True), ("frcnn_rects_1", False)]:
    d = os.path.join(OUT, name)
    L = [json.loads(x) for x in open(os.path.join(d, "train_log.jsonl"))]
    E = [json.loads(x) for x in open(os.path.join(d, "eval_log.jsonl"))]
    w = [mean([r["loss"] for r in L[i:i + 6]]) for i in range(0, len(L), 6)]
    if healthy:
        trough = min(w[:4])
        peak_i = max(range(2, 12), key=lambda i: w[i])
        check(name, w[peak_i] > trough + 0.3 and w[-1] < w[0] - 0.5 and w[-1] < w[peak_i] - 0.5
              and E[-1]["bbox_mAP"] > 0.3,
              f"loss first {w[0]:.2f} dip {trough:.2f} peak {w[peak_i]:.2f}@win{peak_i} last {w[-1]:.2f}; "
              f"mAP {E[0]['bbox_mAP']:.3f}->{E[-1]['bbox_mAP']:.3f}")
    else:
        check(name, max(r["loss"] for r in L) > 100 and E[-1]["bbox_mAP"] < 0.02,
              f"max loss {max(r['loss'] for r in L):.1f} last {w[-1]:.2f}; final mAP {E[-1]['bbox_mAP']:.4f}")

# ---- TRL GRPO
for name, healthy in [("grpo_qwen2_tiny_a", True), ("grpo_qwen2_tiny_b", False)]:
    st = json.load(open(os.path.join(OUT, name, "checkpoint-80", "trainer_state.json")))
    h = [x for x in st["log_history"] if "reward" in x]
    r0, r1 = h[0]["reward"], h[-1]["reward"]
    c0, c1 = h[0]["completions/clipped_ratio"], h[-1]["completions/clipped_ratio"]
    ok = (r1 > r0 + 0.3 and c1 < 0.2) if healthy else (c1 > 0.8 and c0 < 0.3)
    check(name, ok, f"reward {r0:.3f}->{r1:.3f}, clipped_ratio {c0:.3f}->{c1:.3f}, "
                    f"mean_length {h[0]['completions/mean_length']:.1f}->{h[-1]['completions/mean_length']:.1f}")

# ---- ignite deep ReLU MLP
for name, healthy in [("ignite_mlp10_y", True), ("ignite_mlp10_x", False)]:
    d = os.path.join(OUT, name)
    acc = tb_scalars(os.path.join(d, "tb", "events*"), "validation/accuracy")
    loss = tb_scalars(os.path.join(d, "tb", "events*"), "training/batchloss")
    dead = json.load(open(os.path.join(d, "dead_units.json")))["dead_frac_per_epoch"][-1]
    l0, l1 = mean([v for _, v in loss[:5]]), mean([v for _, v in loss[-20:]])
    if healthy:
        ok = acc[-1][1] > 0.8 and 0 < max(dead) < 0.5 and l1 < l0 - 0.8
    else:
        ok = acc[-1][1] < 0.4 and min(dead[2:]) == 1.0 and abs(l1 - math.log(5)) < 0.05
    check(name, ok, f"batchloss {l0:.3f}->{l1:.3f}, val acc {acc[0][1]:.3f}->{acc[-1][1]:.3f}, "
                    f"dead frac per layer {[round(x, 2) for x in dead]}")

# ---- fastai fine_tune
for name, healthy in [("fastai_shapes_ft_1", True), ("fastai_shapes_ft_2", False)]:
    rows = [r for r in csv.reader(open(os.path.join(OUT, name, "history.csv"))) if r and r[0] != "epoch"]
    tl = [float(r[1]) for r in rows]
    acc = [float(r[3]) for r in rows]
    ok = (tl[-1] < 0.5 * tl[0] and acc[-1] > 0.9) if healthy else (min(tl) > 1.3 and max(acc) < 0.75)
    check(name, ok and len(rows) == 6, f"{len(rows)} epochs (2 frozen + 4 unfrozen), train_loss {tl[0]:.3f}->{tl[-1]:.3f}, "
                                       f"acc {acc[0]:.3f}->{acc[-1]:.3f}")

# ---- Lightning
for name, healthy in [("lit_charlm_b", True), ("lit_charlm_a", False)]:
    rows = list(csv.DictReader(open(os.path.join(OUT, name, "lightning_logs", "version_0", "metrics.csv"))))
    st = [float(r["train_loss_step"]) for r in rows if r.get("train_loss_step")]
    lrs = [float(r["lr-AdamW"]) for r in rows if r.get("lr-AdamW")]
    vl = [float(r["val_loss"]) for r in rows if r.get("val_loss")]
    ok = st[-1] < st[0] - 0.4 and ((len(set(lrs)) == 4) if healthy else (len(set(lrs)) == 1))
    check(name, ok, f"train_loss_step {st[0]:.3f}->{st[-1]:.3f}, val_loss {vl[0]:.3f}->{vl[-1]:.3f}, "
                    f"lr values {sorted(set(lrs), reverse=True)}")

# ---- Accelerate
for name, healthy in [("accel_gpt2_char_1", True), ("accel_gpt2_char_2", False)]:
    loss = [v for _, v in tb_scalars(os.path.join(OUT, name, "tb", "**", "events*"), "train/loss")]
    f, l = mean(loss[:5]), mean(loss[-5:])
    ok = (l < f - 1.0) if healthy else any(math.isnan(x) or x > 100 for x in loss)
    check(name, ok, f"loss first5 {f:.3f} max {max(x for x in loss if not math.isnan(x)):.1f} last5 {l:.3f}, "
                    f"nan steps {sum(math.isnan(x) for x in loss)}/{len(loss)}")

# ---- SB3 DQN
d = os.path.join(OUT, "sb3_dqn_cartpole")
rows = list(csv.DictReader(open(os.path.join(d, "progress.csv"))))
r = [float(x["rollout/ep_rew_mean"]) for x in rows if x.get("rollout/ep_rew_mean")]
ev = np.load(os.path.join(d, "eval", "evaluations.npz"))["results"].mean(1)
check("sb3_dqn_cartpole", r[-1] > 3 * r[0] and ev.max() > 150,
      f"ep_rew_mean {r[0]:.1f}->{r[-1]:.1f}, eval mean returns {[round(x, 1) for x in ev.tolist()]}")

# ---- HF Trainer resumed
d = os.path.join(OUT, "hf_bert_resume")
st = json.load(open(os.path.join(d, "trainer_state.json")))
tr = [x for x in st["log_history"] if "loss" in x]
evs = [x for x in st["log_history"] if "eval_accuracy" in x]
runs = glob.glob(os.path.join(d, "runs", "*"))
ep5 = [v for s, v in tb_scalars(os.path.join(d, "runs", "*", "events*"), "train/loss") if s == 160]
check("hf_bert_resume", tr[-1]["loss"] < tr[0]["loss"] - 0.3 and evs[-1]["eval_accuracy"] > 0.85
      and len(runs) == 2 and len(ep5) == 2,
      f"train loss {tr[0]['loss']:.3f}->{tr[-1]['loss']:.4f}, eval acc {evs[0]['eval_accuracy']:.3f}->"
      f"{evs[-1]['eval_accuracy']:.3f}, {len(runs)} TB run dirs, step-160 loss logged twice: {ep5}")

# ---- timm
for name, healthy in [("timm_effnet_ft_b", True), ("timm_effnet_ft_a", False)]:
    d = os.path.join(OUT, name)
    rows = list(csv.DictReader(open(os.path.join(d, "summary.csv"))))
    ck = sorted(glob.glob(os.path.join(d, "checkpoint-*.pth.tar")))
    a = torch.load(ck[0], map_location="cpu", weights_only=False)["state_dict"]
    b = torch.load(os.path.join(d, "last.pth.tar"), map_location="cpu", weights_only=False)["state_dict"]
    head_same = torch.equal(a["classifier.weight"], b["classifier.weight"])
    stem_same = torch.equal(a["conv_stem.weight"], b["conv_stem.weight"])
    tl0, tl1 = float(rows[0]["train_loss"]), float(rows[-1]["train_loss"])
    ok = (not head_same and tl1 < 0.05) if healthy else (head_same and not stem_same and tl1 > 0.08)
    check(name, ok, f"train_loss {tl0:.3f}->{tl1:.3f}, eval_top1 {float(rows[0]['eval_top1']):.1f}->"
                    f"{float(rows[-1]['eval_top1']):.1f}, classifier unchanged between {os.path.basename(ck[0])} "
                    f"and last: {head_same}, stem unchanged: {stem_same}")

print(f"{len(failures)} failures" + (f": {failures}" if failures else ""))
sys.exit(1 if failures else 0)
