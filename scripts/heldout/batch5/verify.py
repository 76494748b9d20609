"""Read back every run's own logs and print / assert the key numbers recorded in answers.json."""
import os, sys, json, glob
import numpy as np
import pandas as pd
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

R = sys.argv[1] if len(sys.argv) > 1 else "/work/batch5/runs"
res = {}


def tb(path_glob, tag):
    vals = []
    for f in sorted(glob.glob(path_glob, recursive=True)):
        ea = EventAccumulator(f, size_guidance={"scalars": 0}); ea.Reload()
        if tag in ea.Tags()["scalars"]:
            vals += [(e.step, e.value) for e in ea.Scalars(tag)]
    return vals


def state(run):
    cks = sorted(glob.glob(f"{R}/{run}/checkpoint-*/trainer_state.json"), key=lambda p: int(p.split("-")[-1].split("/")[0]))
    return json.load(open(cks[-1]))["log_history"]


def r(x, n=3):
    return round(float(x), n)


# HF resume
lh = state("tickets_bert_tiny")
ev = [(h["step"], r(h["eval_loss"]), r(h["eval_accuracy"])) for h in lh if "eval_loss" in h]
tr = [(h["step"], r(h["loss"])) for h in lh if "loss" in h]
print("tickets_bert_tiny eval", ev, "train first/last", tr[0], tr[-1], "tb dirs", os.listdir(f"{R}/tickets_bert_tiny/runs"))
assert ev[-1][1] < 0.3 * ev[0][1] and tr[-1][1] < tr[0][1]
# HF mlm ft
lh = state("tickets6_bert_mlm_ft")
ev = [(h["epoch"], r(h["eval_loss"]), r(h["eval_accuracy"])) for h in lh if "eval_loss" in h]
tr = [(h["step"], r(h["loss"])) for h in lh if "loss" in h]
print("tickets6_bert_mlm_ft eval", ev, "train first/last", tr[0], tr[-1])
assert ev[-1][1] < ev[0][1] and ev[-1][2] > 0.9
# LoRA
lh = state("counting_gpt2_lora")
ev = [(h["step"], r(h["eval_loss"]), r(h.get("eval_mean_token_accuracy", -1))) for h in lh if "eval_loss" in h]
tr = [(h["step"], r(h["loss"])) for h in lh if "loss" in h]
print("counting_gpt2_lora eval", ev, "train first/last", tr[0], tr[-1], "min", min(t[1] for t in tr))
assert ev[-1][1] < 0.5 * ev[0][1]
# GRPO
for run in ["evendigits_gpt2_grpo", "digitstream_gpt2_grpo"]:
    lh = [h for h in state(run) if "reward" in h]
    keys = ["reward", "completions/mean_length", "completions/clipped_ratio", "kl", "entropy", "loss"]
    tab = [[h["step"]] + [r(h[k]) for k in keys] for h in lh]
    print(run, keys); [print("  ", t) for t in tab[::3] + [tab[-1]]]
lh = [h for h in state("evendigits_gpt2_grpo") if "reward" in h]
assert np.mean([h["reward"] for h in lh[-5:]]) > np.mean([h["reward"] for h in lh[:2]]) + 0.3
# YOLO
for run in ["shapes_yolov8t", "colorblocks_yolov8t"]:
    df = pd.read_csv(f"{R}/{run}/runs/detect/train/results.csv"); df.columns = [c.strip() for c in df.columns]
    print(run, df[["epoch", "train/box_loss", "train/cls_loss", "val/box_loss", "metrics/mAP50(B)", "metrics/mAP50-95(B)"]].iloc[[0, 4, 6, 9, 14, 19, 24, 29]].round(4).to_string())
    print("  best mAP50", df["metrics/mAP50(B)"].max())
assert pd.read_csv(f"{R}/shapes_yolov8t/runs/detect/train/results.csv")["metrics/mAP50(B)"].max() > 0.3
# SB3
df = pd.read_csv(f"{R}/pendulum_sac/progress.csv")
print("pendulum_sac", df[["time/total_timesteps", "rollout/ep_rew_mean", "eval/mean_reward", "train/critic_loss", "train/actor_loss", "train/ent_coef"]].round(3).to_string())
e = df["eval/mean_reward"].dropna().values
assert e[-1] > e[0] + 500
rew = tb(f"{R}/cartpole_ppo_shaped/PPO_1/events*", "rollout/ep_rew_mean"); ent = tb(f"{R}/cartpole_ppo_shaped/PPO_1/events*", "train/entropy_loss")
kl = tb(f"{R}/cartpole_ppo_shaped/PPO_1/events*", "train/approx_kl")
print("cartpole_ppo_shaped ep_rew_mean", [(s, r(v, 2)) for s, v in rew[::4]], "entropy_loss", [(s, r(v, 3)) for s, v in ent[::6]], "approx_kl", [(s, r(v, 4)) for s, v in kl[::6]])
# ignite
for run in ["shapes24_cnn_ignite", "digits16_cnn_ignite"]:
    g = f"{R}/{run}/tb_logs/events*"
    print(run, "train/loss", [r(v) for _, v in tb(g, "training/loss")], "val/loss", [r(v) for _, v in tb(g, "validation/loss")],
          "val/acc", [r(v) for _, v in tb(g, "validation/accuracy")], "lr", sorted(set(r(v, 4) for _, v in tb(g, "lr/group_0"))), os.listdir(f"{R}/{run}/checkpoints"))
assert tb(f"{R}/shapes24_cnn_ignite/tb_logs/events*", "validation/accuracy")[-1][1] > 0.85
# Lightning
df = pd.read_csv(f"{R}/shapes24_bncnn_lightning/lightning_logs/version_0/metrics.csv")
t = df.dropna(subset=["train_loss"]); v = df.dropna(subset=["val_loss"])
print("shapes24_bncnn_lightning train_loss/50 steps", [r(x, 2) for x in t.groupby(t.step // 50).train_loss.mean()], "max", r(t.train_loss.max()), "at", int(t.step[t.train_loss.idxmax()]))
print("  val_loss", [r(x, 2) for x in v.val_loss], "\n  val_acc", [r(x, 3) for x in v.val_acc])
# timm
for run in ["shapes32_effnet_timm_ft/pretrain", "shapes32_effnet_timm_ft", "textures24_effnet_timm"]:
    df = pd.read_csv(f"{R}/{run}/summary.csv"); print(run); print(df.round(4).to_string())
# diffusers
g = f"{R}/sprites16_ddpm_unet/logs/sprites16_ddpm/events*"
g = f"{R}/sprites16_ddpm_unet/logs/*/events*"
l = tb(g, "loss"); print("sprites16_ddpm_unet loss", [(s, r(v)) for s, v in l[::5]], "ema_decay last", r(tb(g, "ema_decay")[-1][1]))
assert l[-1][1] < 0.5 * l[0][1]
# keras
df = pd.read_csv(f"{R}/colourshapes_cnn_keras_ft/training_log.csv"); print("colourshapes_cnn_keras_ft"); print(df.round(4).to_string())
print("ALL ASSERTS OK")
