# Extract headline numbers from each run's artifacts (used to fill answers.json notes).
import glob, json, os, sys
import pandas as pd
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import sys
R = sys.argv[1] if len(sys.argv) > 1 else "runs"
def tb(d):
    ea = EventAccumulator(d, size_guidance={"scalars": 0}); ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}

def f(x): return round(float(x), 4)

def summ_series(name, s, kind):
    v = [x for _, x in s]
    if kind == "train":
        k = max(1, len(v) // 20)
        return {f"{name}_first": f(v[0]), f"{name}_last": f(v[-1]), f"{name}_n": len(v),
                f"{name}_first5pct_mean": f(sum(v[:k]) / k), f"{name}_last5pct_mean": f(sum(v[-k:]) / k),
                f"{name}_max": f(max(v))}
    if kind == "loss":
        i = v.index(min(v))
        return {f"{name}_first": f(v[0]), f"{name}_best": f(v[i]), f"{name}_best_step": s[i][0],
                f"{name}_last": f(v[-1]), f"{name}_steps": f"{s[0][0]}..{s[-1][0]}"}
    return {f"{name}_first": f(v[0]), f"{name}_best": f(max(v)), f"{name}_last": f(v[-1])}

out = {}
TB = {"pt_cnn_sgd_bn": ("tb", "train/loss", "val/loss", "val/acc"),
      "pt_cnn_shuffled_labels": ("tb", "train/loss", "val/loss", "val/acc"),
      "pt_transformer_adamw": ("runs", "train/loss", "val/loss", "val/accuracy"),
      "pt_transformer_lr100x": ("runs", "train/loss", "val/loss", "val/accuracy"),
      "pt_mlp_tabular_adam": ("", "train_loss", "val/loss", "val/acc"),
      "pt_mlp_tabular_adam_lr5e-2": ("", "train_loss", "val/loss", "val/acc"),
      "pt_gru_charlm": ("logs", "loss/train", "loss/val", "ppl/val"),
      "ignite_dropout_aug": ("tb_logs", "training/batchloss", "validation/loss", "validation/accuracy")}
for run, (sub, tr, vl, vm) in TB.items():
    s = tb(os.path.join(R, run, sub))
    d = {}
    d.update(summ_series("train_loss", s[tr], "train"))
    d.update(summ_series("val_loss", s[vl], "loss"))
    d.update(summ_series(vm.replace("/", "_"), s[vm], "metric"))
    out[run] = d

def csvrun(run, path, tr, vl, vm):
    df = pd.read_csv(os.path.join(R, run, path)).dropna(subset=[vl])
    t = pd.read_csv(os.path.join(R, run, path)).dropna(subset=[tr])
    i = df[vl].values.argmin()
    out[run] = {"train_loss_first": f(t[tr].iloc[0]), "train_loss_last": f(t[tr].iloc[-1]),
                "val_loss_first": f(df[vl].iloc[0]), "val_loss_best": f(df[vl].iloc[i]),
                "val_loss_best_row": int(i), "val_loss_last": f(df[vl].iloc[-1]),
                f"{vm}_first": f(df[vm].iloc[0]), f"{vm}_last": f(df[vm].iloc[-1]), f"{vm}_best": f(df[vm].max()),
                "epochs": len(df)}
csvrun("keras_conv1d_finetune", "train_history.txt", "loss", "val_loss", "val_accuracy")
csvrun("keras_mlp_tabular", "log.csv", "loss", "val_loss", "val_accuracy")
csvrun("keras_mlp_tabular_shuffled", "log.csv", "loss", "val_loss", "val_accuracy")
csvrun("fastai_tabular_ls", "history.csv", "train_loss", "valid_loss", "accuracy")
csvrun("pt_loop_epoch_csv", "train_log.csv", "train_loss", "val_loss", "val_acc")
csvrun("pt_loop_epoch_csv_val_raw", "train_log.csv", "train_loss", "val_loss", "val_acc")
csvrun("lightning_noisy_slow", "lightning_logs/version_0/metrics.csv", "train_loss_epoch", "val_loss", "val_acc")
m = pd.read_csv(os.path.join(R, "lightning_noisy_slow/lightning_logs/version_0/metrics.csv")).dropna(subset=["train_loss_step"])
out["lightning_noisy_slow"].update({"train_loss_step_first": f(m.train_loss_step.iloc[0]), "train_loss_step_last": f(m.train_loss_step.iloc[-1])})

st = json.load(open(sorted(glob.glob(os.path.join(R, "hf_bert_finetune/finetune/checkpoint-*/trainer_state.json")),
                           key=lambda p: int(p.split("-")[-1].split("/")[0]))[-1]))
tl = [h["loss"] for h in st["log_history"] if "loss" in h]
ev = [(h["epoch"], h["eval_loss"], h["eval_accuracy"]) for h in st["log_history"] if "eval_loss" in h]
i = min(range(len(ev)), key=lambda j: ev[j][1])
out["hf_bert_finetune"] = {"train_loss_first": f(tl[0]), "train_loss_last": f(tl[-1]), "train_loss_n": len(tl),
                           "train_loss_mean_epoch1": f(sum(tl[:4]) / 4), "train_loss_mean_epoch5": f(sum(tl[-4:]) / 4),
                           "eval_loss_first": f(ev[0][1]), "eval_loss_best": f(ev[i][1]), "eval_loss_best_epoch": ev[i][0],
                           "eval_loss_last": f(ev[-1][1]), "eval_accuracy_first": f(ev[0][2]), "eval_accuracy_last": f(ev[-1][2]),
                           "best_model_checkpoint": st.get("best_model_checkpoint")}
json.dump(out, open("/tmp/summary.json", "w"), indent=1)
for k, v in out.items(): print(k, v)
