"""Write answers.json (ground truth + what the logs show) from the files in OUT.
usage: make_answers.py OUT [answers.json]"""
import csv
import glob
import json
import math
import os
import sys

import numpy as np

OUT = sys.argv[1]
DEST = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "answers.json")


def mean(x):
    return sum(x) / len(x)


def f(x, n=3):
    return f"{x:.{n}f}"


def tb(path_glob, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    vals = []
    for fn in sorted(glob.glob(path_glob, recursive=True)):
        ea = EventAccumulator(fn, size_guidance={"scalars": 0})
        ea.Reload()
        if tag in ea.Tags()["scalars"]:
            vals += [(e.step, e.value) for e in ea.Scalars(tag)]
    return vals


A = {}

# ---------------- torchvision Faster R-CNN
for name, healthy in [("frcnn_rects_2", True), ("frcnn_rects_1", False)]:
    d = os.path.join(OUT, name)
    L = [json.loads(x) for x in open(os.path.join(d, "train_log.jsonl"))]
    E = [json.loads(x) for x in open(os.path.join(d, "eval_log.jsonl"))]
    w = [mean([r["loss"] for r in L[i:i + 6]]) for i in range(0, len(L), 6)]
    ep = [e["train_loss_epoch"] for e in E]
    maps = [e["bbox_mAP"] for e in E]
    layout = ("config.yaml (solver: sgd momentum 0.9, warmup 10 iters then constant LR, clip_grad_norm 10), "
              "train_log.jsonl (one line per iteration: lr, loss, loss_classifier, loss_box_reg, loss_objectness, "
              "loss_rpn_box_reg, grad_norm), eval_log.jsonl (per-epoch train_loss_epoch + COCO bbox mAP/mAP50/mAR100 "
              "on 32 held-out images), stdout.log, checkpoints/checkpoint_epoch{3,7}.pth, model_final.pth; "
              f"{len(L)} iterations, 8 epochs, batch 4.")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "torchvision (Faster R-CNN, plain PyTorch loop)",
                   "notes": (f"From-scratch detector whose total loss dips then RISES before falling: 6-iter window means "
                             f"{f(w[0],2)} -> dip {f(min(w[:4]),2)} -> peak {f(max(w[3:10]),2)} (iters ~25-35, loss_box_reg "
                             f"and loss_classifier grow as the RPN starts producing positive proposals) -> {f(w[-1],2)} at the end. "
                             f"Per-epoch train loss {[round(x, 3) for x in ep]} (epoch 1 is the peak). mAP "
                             f"{[round(x, 3) for x in maps]}, mAP50 {f(E[-1]['bbox_mAP_50'])} at the end. LR 0.02 after a "
                             f"10-iter linear warmup from 2e-5. Grad norm ~0.4 in the dip, 2-4 later. " + layout)}
    else:
        big = [r for r in L if r["loss"] > 100]
        A[name] = {"healthy": False,
                   "bug": "base LR is 100x too high (SGD lr 2.0 instead of 0.02 in the otherwise identical sibling "
                          "frcnn_rects_2): the detector blows up and collapses to predicting nothing.",
                   "framework": "torchvision (Faster R-CNN, plain PyTorch loop)",
                   "notes": (f"config.yaml says base_lr 2.0. Loss explodes right after warmup: {len(big)} iterations above 100, "
                             f"max {f(max(r['loss'] for r in L),0)} (iter {max(L, key=lambda r: r['loss'])['iter']}), grad_norm up to "
                             f"{f(max(r['grad_norm'] for r in L),0)} before clipping; per-epoch train loss {[round(x, 2) for x in ep]}. "
                             f"From epoch 4 the loss sits flat at ~{f(mean([r['loss'] for r in L[-48:]]),2)} (LOWER than the healthy sibling's "
                             f"final {f(mean([json.loads(x)['loss'] for x in open(os.path.join(OUT,'frcnn_rects_2','train_log.jsonl'))][-48:]),2)}) "
                             f"with grad_norm ~0.1: the RPN has collapsed to all-background, so the ROI-head losses are near zero. "
                             f"mAP is ~0 every epoch {[round(x, 4) for x in maps]}. The low final loss is misleading; the "
                             f"explosion, the collapsed grad norm and the zero mAP are the signal. " + layout)}

# ---------------- TRL GRPO
for name, healthy in [("grpo_qwen2_tiny_a", True), ("grpo_qwen2_tiny_b", False)]:
    st = json.load(open(os.path.join(OUT, name, "checkpoint-80", "trainer_state.json")))
    h = [x for x in st["log_history"] if "reward" in x]
    traj = [(x["step"], round(x["reward"], 2), round(x["completions/clipped_ratio"], 2)) for x in h[::6]]
    layout = ("Layout: GRPOTrainer output_dir: train.log (stdout; one dict per logging step with loss, reward, reward_std, "
              "rewards/a_run_reward/mean, completions/mean_length, completions/clipped_ratio, entropy, ...), "
              "runs/<date>_<host>/events.out.tfevents.*, checkpoint-40/ and checkpoint-80/ (trainer_state.json with "
              "log_history, model.safetensors, optimizer.pt, scheduler.pt, tokenizer), final model.safetensors + config.json "
              "+ tokenizer at the top level. Tiny Qwen2 (75k params, 2 layers, hidden 64) from config, 12-token character "
              "vocabulary; 80 steps, 16 completions per step (2 prompts x 8 generations), max_completion_length 24, lr 3e-3 "
              "linear decay, beta 0. Reward = min(#'a', 6)/6 + coef*max(0, len-8).")
    base = (f"reward {f(h[0]['reward'])} -> {f(h[-1]['reward'])}; clipped_ratio {f(h[0]['completions/clipped_ratio'])} -> "
            f"{f(h[-1]['completions/clipped_ratio'])}; mean completion length {f(h[0]['completions/mean_length'],1)} -> "
            f"{f(h[-1]['completions/mean_length'],1)}; entropy {f(h[0]['entropy'],2)} -> {f(h[-1]['entropy'],2)}. "
            f"(step, reward, clipped_ratio) every 12 steps: {traj}. ")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "TRL GRPOTrainer (transformers)",
                   "notes": "Healthy GRPO: reward rises while completions stay short and terminated. " + base + layout}
    else:
        A[name] = {"healthy": False,
                   "bug": "the length term of the reward has the wrong sign (+0.1 per character past 8 instead of -0.1), "
                          "so the policy is paid for length and stops emitting EOS: most completions hit "
                          "max_completion_length.",
                   "framework": "TRL GRPOTrainer (transformers)",
                   "notes": ("Reward rises fast (looks like success) but completions/clipped_ratio climbs to ~1.0 and "
                             "mean_length pins at the 24-token cap from ~step 30; reward_std collapses to ~0 and loss ~0 "
                             "afterwards. " + base + layout)}

# ---------------- ignite
for name, healthy in [("ignite_mlp10_y", True), ("ignite_mlp10_x", False)]:
    d = os.path.join(OUT, name)
    acc = [v for _, v in tb(os.path.join(d, "tb", "events*"), "validation/accuracy")]
    vloss = [v for _, v in tb(os.path.join(d, "tb", "events*"), "validation/loss")]
    bl = [v for _, v in tb(os.path.join(d, "tb", "events*"), "training/batchloss")]
    dead = json.load(open(os.path.join(d, "dead_units.json")))["dead_frac_per_epoch"]
    ck = sorted(os.path.basename(x) for x in glob.glob(os.path.join(d, "checkpoints", "*.pt")))
    layout = ("Layout: config.json, train.log (FBResearchLogger lines every 16 iters + a per-epoch 'ignite.eval' line "
              "with train/val loss, val acc and per-layer dead fraction), tb/events.out.tfevents.* (TensorboardLogger: "
              "training/batchloss every 4 iters, lr/group_0, grads_norm/<param> every 16 iters, training|validation "
              "loss+accuracy per epoch, dead_frac/relu_<i> per epoch), dead_units.json, checkpoints/ "
              f"(Checkpoint+DiskSaver, n_saved=2 by val acc: {ck}). 10 hidden ReLU layers of width 64, Adam lr 2e-3, "
              "10 epochs x 64 iters, 5-class Gaussian-mixture data (16-D).")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "pytorch-ignite",
                   "notes": (f"Deep ReLU MLP with some dead units that still learns: batch loss {f(mean(bl[:3]))} -> "
                             f"{f(mean(bl[-16:]))}, val acc {[round(x, 3) for x in acc]}, val loss {f(vloss[0])} -> "
                             f"{f(min(vloss))} (min) -> {f(vloss[-1])} (mild overfit late, acc stays ~0.89). Dead fraction "
                             f"per layer at the end {[round(x, 3) for x in dead[-1]]}: 0 in the first layers, up to "
                             f"{f(max(max(e) for e in dead),2)} in deeper ones; grads_norm of every layer stays non-zero. " + layout)}
    else:
        A[name] = {"healthy": False,
                   "bug": "hidden-layer biases initialised to -2.0 (nn.init.constant_(bias, -2.0)) instead of 0: almost "
                          "all ReLUs are dead from the second layer on, so no gradient reaches the network and it never learns.",
                   "framework": "pytorch-ignite",
                   "notes": (f"config.json bias_init -2.0. Loss flat at ln(5)={f(math.log(5))} from the start: batch loss "
                             f"{f(mean(bl[:3]))} -> {f(mean(bl[-16:]))}, val loss {f(vloss[0])} -> {f(vloss[-1])}, val acc stuck at "
                             f"{f(acc[-1])} (majority class) every epoch. dead_frac per layer {[round(x, 3) for x in dead[-1]]} "
                             f"(layers 3-10 100% dead, constant over epochs); grads_norm of all hidden layers is 0, only the "
                             f"output bias moves. " + layout)}

# ---------------- fastai
for name, healthy in [("fastai_shapes_ft_1", True), ("fastai_shapes_ft_2", False)]:
    rows = [r for r in csv.reader(open(os.path.join(OUT, name, "history.csv"))) if r]
    data = [r for r in rows if r[0] != "epoch"]
    tl = [round(float(r[1]), 3) for r in data]
    vl = [round(float(r[2]), 3) for r in data]
    ac = [round(float(r[3]), 3) for r in data]
    layout = ("Layout: fastai Learner(path=run dir): history.csv from CSVLogger(append=True) -> TWO blocks, each with its own "
              "header 'epoch,train_loss,valid_loss,accuracy,time' and epochs restarting at 0 (2 frozen epochs, then 4 unfrozen); "
              "models/best.pth (SaveModelCallback on valid_loss, with optimizer) and models/final.pth; pretrained/body.pth "
              "(body from a 3-epoch pretraining on 4 filled shapes, done first in the same script); config.json; train.log "
              "(stdout incl. progress bars). Recipe: learn.fine_tune(4, base_lr=4e-3, freeze_epochs=2) = fit_one_cycle(2) "
              "with the body frozen (BN still trains), then unfreeze + fit_one_cycle(4, slice(2e-5, 2e-3)). 4 classes "
              "(square/circle x filled/hollow), 1024 train / 256 valid 32x32 images, bs 64.")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "fastai",
                   "notes": (f"Frozen-then-unfrozen fine-tune. Frozen block: train_loss {tl[:2]}, valid_loss {vl[:2]}, "
                             f"accuracy {ac[:2]}; after unfreezing the train loss drops again {tl[2:]} (valid {vl[2:]}, acc {ac[2:]}). "
                             "The step down in train loss at the phase change and the restarted epoch counter are expected. " + layout)}
    else:
        A[name] = {"healthy": False,
                   "bug": "training labels are permuted across training examples (validation labels untouched), so the "
                          "training targets are ~75% noise.",
                   "framework": "fastai",
                   "notes": (f"Train loss never moves from ~ln(4)=1.386: {tl} across both phases; valid_loss {vl}; "
                             f"accuracy jumps around {ac} (because ~25% of permuted labels are still right, a weak "
                             "signal leaks through, so accuracy is above 0.25 chance but unstable). Same layout and recipe "
                             "as the healthy sibling fastai_shapes_ft_1. " + layout)}

# ---------------- Lightning
for name, healthy in [("lit_charlm_b", True), ("lit_charlm_a", False)]:
    rows = list(csv.DictReader(open(os.path.join(OUT, name, "lightning_logs", "version_0", "metrics.csv"))))
    st = [float(r["train_loss_step"]) for r in rows if r.get("train_loss_step")]
    lrs = sorted({float(r["lr-AdamW"]) for r in rows if r.get("lr-AdamW")}, reverse=True)
    vl = [round(float(r["val_loss"]), 3) for r in rows if r.get("val_loss")]
    ck = sorted(os.path.basename(x) for x in glob.glob(os.path.join(OUT, name, "lightning_logs", "version_0", "checkpoints", "*")))
    layout = ("Layout: train.log (stdout), lightning_logs/version_0/{metrics.csv, hparams.yaml, checkpoints/" + ", ".join(ck) + "}. "
              "metrics.csv columns epoch, lr-AdamW (LearningRateMonitor, every optimizer step), step, train_loss_step "
              "(every 4 optimizer steps), train_loss_epoch, val_loss, val_ppl. Tiny causal transformer LM (2 layers, d=64) "
              "on generated 'a+b=c;' strings, batch 16, accumulate_grad_batches=4 (20 optimizer steps/epoch, 8 epochs = "
              "160 steps; the step column counts optimizer steps), AdamW lr 3e-3 wd 0.01.")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "PyTorch Lightning",
                   "notes": (f"hparams.yaml scheduler: step (StepLR step_size=2 epochs, gamma=0.5, interval=epoch) and "
                             f"lr-AdamW follows it: {lrs}. train_loss_step {f(st[0])} -> {f(st[-1])}; val_loss per epoch {vl}. " + layout)}
    else:
        A[name] = {"healthy": False,
                   "bug": "hparams say scheduler: cosine (t_max 8), and configure_optimizers builds a CosineAnnealingLR "
                          "but returns only the optimizer, so the scheduler is never stepped and the LR stays at 3e-3.",
                   "framework": "PyTorch Lightning",
                   "notes": (f"lr-AdamW is the same value on every row: {lrs}, while hparams.yaml says scheduler: cosine, "
                             f"t_max: 8. Loss still falls (train_loss_step {f(st[0])} -> {f(st[-1])}) but val_loss is noisier "
                             f"than the healthy sibling lit_charlm_b (StepLR; otherwise identical): {vl}. " + layout)}

# ---------------- Accelerate
for name, healthy in [("accel_gpt2_char_1", True), ("accel_gpt2_char_2", False)]:
    d = os.path.join(OUT, name)
    loss = tb(os.path.join(d, "tb", "**", "events*"), "train/loss")
    gn = tb(os.path.join(d, "tb", "**", "events*"), "train/grad_norm")
    ev = [(s, round(v, 3)) for s, v in tb(os.path.join(d, "tb", "**", "events*"), "eval/loss")]
    lv = [v for _, v in loss]
    layout = ("Layout: config.json (sgd momentum 0.9, lr 0.3, cosine with 10 warmup steps, gradient_accumulation_steps 4, "
              "micro_batch_size 16, 100 update steps), train.log (accelerate logger: every 5 steps 'step N | loss | lr | "
              "grad_norm', eval every 20), tb/char_gpt2/events.out.tfevents.* (train/loss, train/lr, train/grad_norm per "
              "update step, eval/loss + eval/ppl every 20) + tb/char_gpt2/<time>/hparams.yml, checkpoints/checkpoint_0 and "
              "checkpoint_1 (accelerator.save_state at steps 50 and 100: model.safetensors, optimizer.bin, scheduler.bin, "
              "random_states_0.pkl). GPT-2 from config (2 layers, n_embd 64) on generated character sentences. The "
              "grad_norm logged is the norm of the accumulated gradient before the step.")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "HF Accelerate (+transformers GPT2LMHeadModel)",
                   "notes": (f"train/loss {f(mean(lv[:5]))} (first 5) -> peak {f(max(lv))} near the end of warmup "
                             f"(step {max(loss, key=lambda t: t[1])[0]}, SGD with lr 0.3 briefly overshoots) -> {f(mean(lv[-5:]))} "
                             f"(last 5); eval/loss {ev}; grad_norm {f(gn[0][1],2)} -> {f(gn[-1][1],2)}; lr warms up to 0.3 then "
                             f"cosine-decays to 0. " + layout)}
    else:
        first_nan = next(s for s, v in loss if math.isnan(v))
        A[name] = {"healthy": False,
                   "bug": "manual gradient accumulation without dividing the micro-batch loss by accumulation_steps (4): "
                          "the accumulated gradient is 4x too large, i.e. the effective SGD LR is 1.2 instead of 0.3, "
                          "and training diverges.",
                   "framework": "HF Accelerate (+transformers GPT2LMHeadModel)",
                   "notes": (f"Identical config.json to accel_gpt2_char_1. grad_norm is ~4x the healthy run's from step 1 "
                             f"({f(gn[0][1],2)} at step 1 vs 2.83 in the healthy run; 4-30 over the first 12 steps), loss climbs during warmup to "
                             f"{f(max(v for v in lv if not math.isnan(v)),0)} and is NaN from step {first_nan} on "
                             f"({sum(math.isnan(v) for v in lv)}/{len(lv)} steps NaN); eval/loss NaN; the LR schedule is "
                             f"logged normally. The checkpoints hold NaN weights. " + layout)}

# ---------------- SB3
d = os.path.join(OUT, "sb3_dqn_cartpole")
rows = list(csv.DictReader(open(os.path.join(d, "progress.csv"))))
r = [(int(x["time/total_timesteps"]), float(x["rollout/ep_rew_mean"])) for x in rows if x.get("rollout/ep_rew_mean")]
evn = np.load(os.path.join(d, "eval", "evaluations.npz"))
A["sb3_dqn_cartpole"] = {
    "healthy": True, "bug": None, "framework": "Stable-Baselines3 (DQN, gymnasium CartPole-v1)",
    "notes": (f"rollout/ep_rew_mean {f(r[0][1],1)} -> max {f(max(v for _, v in r),1)} -> {f(r[-1][1],1)} over 30k steps "
              f"(trajectory every ~5 logs: {[(t, round(v)) for t, v in r[::6]]}); eval mean return every 5000 steps "
              f"{[round(x, 1) for x in evn['results'].mean(1).tolist()]} (noisy, not monotone: normal for DQN); "
              "train/loss (TD loss) rises from ~0.02 to ~0.25 as returns and Q values grow, which is expected; exploration_rate "
              "decays 1.0 -> 0.04 over the first 16% of steps. rl-zoo hyper-parameters (lr 2.3e-3, train_freq 256, "
              "gradient_steps 128, target_update_interval 10, net [128,128]). Layout: progress.csv + events.out.tfevents.* "
              "(SB3 logger csv+tensorboard), train.log (SB3 stdout tables), monitor.csv (Monitor wrapper, one row per "
              "episode), eval/evaluations.npz + eval/best_model.zip (EvalCallback), checkpoints/dqn_cartpole_{15000,30000}"
              "_steps.zip (CheckpointCallback), dqn_cartpole.zip (final).")}

# ---------------- HF Trainer resumed
d = os.path.join(OUT, "hf_bert_resume")
st = json.load(open(os.path.join(d, "trainer_state.json")))
tr = [(x["epoch"], round(x["loss"], 4)) for x in st["log_history"] if "loss" in x]
evs = [(x["epoch"], round(x["eval_accuracy"], 3)) for x in st["log_history"] if "eval_accuracy" in x]
tbl = tb(os.path.join(d, "runs", "*", "events*"), "train/loss")
runs = sorted(os.path.basename(x) for x in glob.glob(os.path.join(d, "runs", "*")))
A["hf_bert_resume"] = {
    "healthy": True, "bug": None, "framework": "HF transformers Trainer",
    "notes": (f"Killed and resumed run. First process SIGKILLed at step 172 (12 steps into epoch 6) after epochs 1-5 were "
              f"logged; the last checkpoint then was checkpoint-128 (end of epoch 4; save_steps=64 = every 2 epochs, "
              f"save_total_limit 2). Re-run with resume_from_checkpoint=True continues from step 128, so epoch 5 (step 160) "
              f"is trained and logged twice: TensorBoard train/loss at step 160 = {[round(v, 4) for s, v in tbl if s == 160]} "
              f"(one per run dir: {runs}); train.log holds both processes' output (the first ends abruptly, no traceback). "
              f"logging_strategy=eval_strategy='epoch': final trainer_state.json (trainer.save_state) log_history train loss "
              f"by epoch {tr}; eval accuracy {evs}. Framework quirks: epoch 4's log entry is MISSING from every "
              f"trainer_state.json (checkpoint-128 was written at the step before the epoch-end log was appended, and the "
              f"resume restored that history; epoch 4 exists only in the first run's TensorBoard file and train.log), and "
              f"checkpoint-256/trainer_state.json lacks the epoch-8 entries for the same reason. lr 1e-3 linear with 20 warmup steps, 8 epochs x 32 steps. Layout: output_dir with "
              "trainer_state.json (top level, full resumed history), runs/<date>_<host>/events.out.tfevents.* (two run dirs, one per process: steps 32-160 and 160-256), checkpoint-192/ and checkpoint-256/ (trainer_state.json, model.safetensors, "
              "optimizer.pt, scheduler.pt, rng_state.pth, tokenizer), final model.safetensors/config.json/tokenizer, "
              "training_args.bin, train.log. Tiny BERT (2 layers, hidden 64) from config with a local word-level tokenizer; "
              "task: more positive than negative words.")}

# ---------------- timm
import torch  # noqa: E402
for name, healthy in [("timm_effnet_ft_b", True), ("timm_effnet_ft_a", False)]:
    d = os.path.join(OUT, name)
    rows = list(csv.DictReader(open(os.path.join(d, "summary.csv"))))
    tl = [round(float(x["train_loss"]), 3) for x in rows]
    el = [round(float(x["eval_loss"]), 3) for x in rows]
    t1 = [round(float(x["eval_top1"]), 1) for x in rows]
    lr = [float(x["lr"]) for x in rows]
    cks = sorted(os.path.basename(x) for x in glob.glob(os.path.join(d, "*.pth.tar")))
    sd = {c: torch.load(os.path.join(d, c), map_location="cpu", weights_only=False)["state_dict"] for c in cks}
    same = all(torch.equal(sd[cks[0]]["classifier.weight"], sd[c]["classifier.weight"]) for c in cks)
    layout = ("Layout like timm train.py: args.yaml, summary.csv (epoch,train_loss,eval_loss,eval_top1,eval_top5,lr via "
              f"timm.utils.update_summary), CheckpointSaver files {cks} (max_history 2; state_dict, optimizer, args, "
              "metric), train.log ('Train: <epoch> [i/24] Loss: val (avg) LR' and 'Test: [epoch] Loss Acc@1 Acc@5' lines), "
              "pretrained/pretrain_weights.pth (3-epoch pretraining on 4 filled shapes, 4-class head). Fine-tune: "
              "timm test_efficientnet (100k params) with model.reset_classifier(6), full fine-tune, SGD lr 0.05 momentum "
              "0.9 wd 1e-4, timm CosineLRScheduler per epoch with 1 warmup epoch (lr column " + str([round(x, 4) for x in lr]) +
              "), 6 epochs x 24 iters, 6 classes (square/circle/triangle x filled/hollow).")
    if healthy:
        A[name] = {"healthy": True, "bug": None, "framework": "timm (plain loop with timm utils)",
                   "notes": (f"train_loss {tl}, eval_loss {el}, eval_top1 {t1}. classifier.weight changes between "
                             "checkpoint-4 and checkpoint-5/last (the new head trains). " + layout)}
    else:
        A[name] = {"healthy": False,
                   "bug": "the optimizer (create_optimizer_v2) is built before model.reset_classifier(6), so the new "
                          "classifier's parameters are not in the optimizer and keep their random init while only the "
                          "backbone is fine-tuned.",
                   "framework": "timm (plain loop with timm utils)",
                   "notes": (f"Subtle in the curves: the backbone learns to fit the frozen random head, so accuracy still "
                             f"reaches ~99% (eval_top1 {t1}), but the loss plateaus ~10x higher than the otherwise "
                             f"identical sibling timm_effnet_ft_b: train_loss {tl} (healthy ends ~0.01), eval_loss {el}. "
                             f"The clear evidence is in the checkpoints: classifier.weight/bias are bit-identical in "
                             f"{cks} (identical: {same}) while the backbone weights change between checkpoints. " + layout)}

order = ["frcnn_rects_1", "frcnn_rects_2", "grpo_qwen2_tiny_a", "grpo_qwen2_tiny_b", "ignite_mlp10_x", "ignite_mlp10_y",
         "fastai_shapes_ft_1", "fastai_shapes_ft_2", "lit_charlm_a", "lit_charlm_b", "accel_gpt2_char_1",
         "accel_gpt2_char_2", "sb3_dqn_cartpole", "hf_bert_resume", "timm_effnet_ft_a", "timm_effnet_ft_b"]
with open(DEST, "w") as fh:
    json.dump({k: A[k] for k in order}, fh, indent=2)
print(f"wrote {DEST}: {sum(v['healthy'] for v in A.values())} healthy, {sum(not v['healthy'] for v in A.values())} bug")
