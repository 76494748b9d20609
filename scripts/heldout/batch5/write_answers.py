import json
A = {}
A["tickets_bert_tiny"] = dict(healthy=True, bug=None, framework="transformers (HF Trainer)", notes=(
    "HF Trainer output_dir: checkpoint-350/, checkpoint-400/ (trainer_state.json, optimizer.pt, scheduler.pt, rng_state.pth), final/, runs/ with TWO TensorBoard dirs "
    "(first process + resumed process). Tiny random-init BERT (2x64) on 5-topic synthetic tickets, linear LR 1e-3 with 40 warmup steps, 400 steps. The first process was "
    "hard-killed (os._exit) at step 170 right after checkpoint-150 (simulated preemption); the same command was relaunched with resume_from_checkpoint=True and ran steps 150-400, "
    "so steps 150-170 appear twice in TensorBoard and log_history is continuous from checkpoint-150. eval_loss 1.605 (step 50) -> 1.027 -> 0.413 (150) -> 0.072 (400); "
    "eval_acc 0.206 -> 0.996 (chance 0.2); train loss 1.611 (step 10) -> 0.319 (step 400; 5% label noise keeps train loss above eval). Healthy: kill+resume is a normal, correct resume."))
A["tickets6_bert_mlm_ft"] = dict(healthy=True, bug=None, framework="transformers (HF Trainer)", notes=(
    "base_mlm/ = tiny BERT pretrained in-script with masked-LM (Trainer, 350 steps, save_strategy=no, saved with save_model); run root = fine-tune output_dir "
    "(checkpoint-*/ x2, final/, runs/ TB). BertForSequenceClassification.from_pretrained(base_mlm) (classifier newly initialised), 400 labelled docs, 6 classes, "
    "lr 5e-4 linear with 10% warmup, 8 epochs, eval per epoch, load_best_model_at_end. eval_loss 1.767 -> 1.484 -> 0.569 (epoch 8); eval_acc 0.365 -> 0.955 from epoch 2 "
    "and flat 0.947-0.955 after; train loss 1.793 -> 0.551. Healthy: small-data fine-tune from an MLM-pretrained encoder, accuracy saturates early while loss keeps falling slowly."))
A["counting_gpt2_lora"] = dict(healthy=True, bug=None, framework="peft LoRA + TRL SFTTrainer", notes=(
    "base_lm/ = tiny GPT-2 (2x64) pretrained in-script on count-by-1 digit sequences; run root = SFTTrainer output_dir with checkpoint-100/, checkpoint-126/ holding only "
    "adapter_model.safetensors + adapter_config.json (+optimizer/scheduler/trainer_state), final_adapter/, runs/ TB. LoRA r=8 on c_attn,c_proj,c_fc (16k trainable of 120k), "
    "lr 5e-3 cosine, 2 epochs on count-by-3 sequences. Train loss 6.04 (step 5) -> 0.38 (step 125); eval_loss 1.966 (step 25) -> 0.442 (50) -> 0.405 (125), "
    "eval token acc 0.27 -> 0.84. Floor ~0.4 is irreducible (random start digit and random length). Healthy."))
A["evendigits_gpt2_grpo"] = dict(healthy=True, bug=None, framework="TRL GRPOTrainer", notes=(
    "base_lm/ = tiny GPT-2 pretrained in-script to emit random digit strings (len 2-10) + EOS; run root = GRPO output_dir (checkpoint-150/ with trainer_state.json, final/, runs/ TB). "
    "Reward = fraction of completion digits that are even; 8 generations/prompt, beta=0.04, lr 5e-4, 150 steps, logged every 5. reward 0.478 -> 0.80 (step 35) -> 0.98-1.0 (steps 80-150); "
    "completions/mean_length 8.0 -> ~4-6 (clipped_ratio ~0 throughout); kl 0.001 -> peak 1.46 -> 0.88; entropy 2.29 -> 1.67 (~ln 5, the even-digit subset); "
    "loss stays within about -0.03..0.15 (near 0 by design in GRPO). Healthy: reward rises on the intended task, no length exploitation."))
A["digitstream_gpt2_grpo"] = dict(healthy=False, framework="TRL GRPOTrainer",
    bug="The reward function returns the raw count of even digits (hits / 5) instead of the fraction of the completion's digits, so longer completions earn more reward and the policy learns to stop emitting EOS (reward hacking by length).",
    notes=("Same layout as evendigits_gpt2_grpo (base_lm/, checkpoint-150/, final/, runs/). reward rises smoothly 0.683 -> 1.285 (step 20) -> 2.385 (step 150) and looks like success, but "
           "completions/mean_length goes 8.0 -> 11.5 (step 20) -> 12.0 = max_completion_length from step ~65 and completions/clipped_ratio 0 -> 0.59 -> 1.0 (every completion truncated, no EOS); "
           "kl 0.001 -> 0.5-0.9 with a spike to 5.1 at step 110; entropy 2.29 -> 1.63. Reward gain comes mostly from length."))
A["shapes_yolov8t"] = dict(healthy=True, bug=None, framework="ultralytics YOLO (detect)", notes=(
    "Run root has the dataset (data/images|labels/{train,val}, labels *.cache, data.yaml), model yaml yolov8-tiny.yaml (yolov8 with width 0.125, ~0.9M params, from scratch), and "
    "ultralytics' own runs/detect/train/{args.yaml, results.csv, weights/best.pt, last.pt} (plots=False). 160 train / 40 val 64x64 images with 1-3 coloured rectangles, 3 classes, 30 epochs, imgsz 64. "
    "mAP50 0 for epochs 1-13 then 0.053 (ep14) -> 0.16 (15) -> 0.54 (20) -> best 0.573 (ep25) -> 0.567 (ep30); mAP50-95 0.278 at end. train box_loss is tiny early (0.45 at ep1) and JUMPS to 4.7 at ep7 "
    "before falling to 2.47: normal for from-scratch TAL assignment (target scores ~0 while predictions are garbage), not a bug; val losses similarly ~0 for the first epochs. Healthy."))
A["colorblocks_yolov8t"] = dict(healthy=False, framework="ultralytics YOLO (detect)",
    bug="The label writer swaps x and y (writes 'cls cy cx h w' from numpy row/col order instead of 'cls cx cy w h'), so every box is transposed relative to the object in the image.",
    notes=("Same layout as shapes_yolov8t (data/ with the broken labels, data.yaml, runs/detect/train/{args.yaml,results.csv,weights/}). Same data generator, model and 30 epochs. "
           "mAP50 stays ~0 for the whole run: best 0.0056 (ep10), 0.0004 at ep30, mAP50-95 <= 0.001; precision ~0.003, recall drifting 0.37 -> 0.08. train box_loss 0.17 -> 4.9 (ep10) and still 3.99 "
           "at ep30 (healthy run reaches 2.47), cls_loss 3.6 at end (healthy 2.43), val/box_loss 4.25 at end and not decreasing."))
A["pendulum_sac"] = dict(healthy=True, bug=None, framework="stable-baselines3 SAC", notes=(
    "Run root: progress.csv + TensorBoard events written by sb3.common.logger.configure(['csv','tensorboard']), monitor.monitor.csv, checkpoints/sac_pendulum_{2000,4000,6000}_steps.zip "
    "(CheckpointCallback), eval/{evaluations.npz,best_model.zip} (EvalCallback every 1000 steps, 3 episodes), final_model.zip. SAC net [64,64], lr 1e-3, 6000 steps. "
    "eval/mean_reward -1555 (1k) -> -1356 (2k) -> -947 (3k) -> -165 (4k) -> -222 (5k) -> -166 (6k); rollout/ep_rew_mean (100-ep window incl. early episodes) -1271 -> -793; "
    "ent_coef auto-tuned 0.74 -> 0.13; critic_loss rises 0.15 -> ~1.2-1.9 as returns grow (normal for SAC). Healthy: Pendulum learned to swing up (~-150 is near-solved)."))
A["cartpole_ppo_shaped"] = dict(healthy=False, framework="stable-baselines3 PPO",
    bug="The custom reward-shaping wrapper returns -shaped instead of shaped (sign flipped), so PPO is trained to end episodes as fast as possible; Monitor sits under the wrapper and still logs the true +1/step reward.",
    notes=("Run root: PPO_1/events (tensorboard_log), monitor/ (0..3.monitor.csv for 4 envs), checkpoints/ppo_cartpole_{8192,16384,24576}_steps.zip, ppo_cartpole_final.zip. "
           "30k steps. rollout/ep_rew_mean = ep_len_mean 19.7 -> 11.9 (5k) -> 9.4 (9k) -> 8.7 (30k) i.e. gets WORSE than random (~22) and pins at the minimum episode length; "
           "entropy_loss -0.69 -> -0.03 (policy becomes deterministic), explained_variance -> 0.97 (value fits the negative returns well), approx_kl tiny (<0.001) late."))
A["shapes24_cnn_ignite"] = dict(healthy=True, bug=None, framework="pytorch-ignite", notes=(
    "Run root: tb_logs/events (ignite TensorboardLogger: training/loss, training/accuracy, validation/loss, validation/accuracy once per EPOCH, lr/group_0 per epoch) and "
    "checkpoints/ (ignite Checkpoint+DiskSaver: best_checkpoint_{13,14}_val_acc=*.pt, checkpoint_420.pt last). 3-conv CNN, SGD 0.05 momentum 0.9, 14 epochs, 4 shape classes (chance 0.25). "
    "Slow start (plateau at ~ln4 for 3 epochs: train loss 1.389, 1.384, 1.379) then train loss -> 0.030, val loss 1.399 -> 0.037, val acc 0.215 -> 0.990. Healthy."))
A["digits16_cnn_ignite"] = dict(healthy=False, framework="pytorch-ignite",
    bug="Adam learning rate set to 0.3 instead of 3e-3 (100x too high), so the network is knocked into a dead/saturated state in the first updates and never learns.",
    notes=("Same layout as shapes24_cnn_ignite (tb_logs/ per-epoch events, checkpoints/ best-2 + last). sklearn digits upsampled to 16x16, 10 classes, 12 epochs. "
           "training/loss flat 2.31-2.33 (= ln 10 chance) every epoch, validation/loss 2.30-2.37, validation/accuracy 0.08-0.14 (chance 0.1); lr/group_0 constant 0.3. "
           "Same script with lr 3e-3 reaches val acc 0.95, loss 0.18."))
A["shapes24_bncnn_lightning"] = dict(healthy=False, framework="lightning",
    bug="SGD peak learning rate 3.0 (~60x the 0.05 this BN-CNN needs) applied from step 0 with no warmup, so the first ~400 steps are unstable until the per-step cosine decay brings the LR down.",
    notes=("Lightning CSVLogger: lightning_logs/version_0/{metrics.csv, hparams.yaml (lr: 3.0), checkpoints/epoch=22-*.ckpt, epoch=23-*.ckpt, last.ckpt}; train_loss/train_acc every 5 steps, "
           "lr-SGD every step (LearningRateMonitor, cosine 3.0 -> 0 over 912 steps), val per epoch. train_loss (50-step means) 1.31, 0.75, 1.43, 0.91, 0.77, 1.29, 0.74, 0.71, 0.46 then 0.2 -> 0.01; "
           "max 2.92 at step 114. val_loss blows up: 2.01, 4.76, 11.1 (ep2), 31.7 (ep6), 33.1 (ep9) with val_acc 0.26-0.74, then recovers from epoch 12 (0.12, acc 0.97) to 0.016 / 0.998 at epoch 23. "
           "Same script with lr 0.05 is at ~0 loss by step 100."))
A["shapes32_effnet_timm_ft"] = dict(healthy=True, bug=None, framework="timm", notes=(
    "timm train.py layout written with timm.utils: run root = experiment dir with args.yaml, summary.csv (update_summary), checkpoint-10/11.pth.tar, last.pth.tar, model_best.pth.tar "
    "(CheckpointSaver, checkpoint_hist=2); pretrain/ = same layout for the in-script pretraining (test_efficientnet, 6 epochs on 24px shapes, top1 36.4 -> 92.6; its epoch-0 eval_loss 4.3 is "
    "BN running stats still warming up). Fine-tune: timm.create_model(pretrained=True, pretrained_cfg_overlay=file=pretrain/model_best.pth.tar), new 4-way head, 600 noisier 32px images, "
    "SGD lr 0.02, cosine with 1 warmup epoch stepped per update (lr 0.0197 -> 1e-5 in summary.csv), label smoothing 0.1, ModelEmaV3 0.99 (eval on EMA). "
    "eval_loss 1.404 -> 0.490, eval_top1 29.2 -> 90.0; train_loss 1.242 -> 0.451 (label-smoothed). Healthy."))
A["textures24_effnet_timm"] = dict(healthy=False, framework="timm",
    bug="create_scheduler_v2 is called without step_on_epochs=False (it defaults to True) while the loop, configured for per-update scheduling (sched_on_updates: true), only calls lr_scheduler.step_update(), so the cosine schedule is never stepped and LR stays at 0.05 for all epochs.",
    notes=("Same timm layout (args.yaml with sched: cosine, epochs: 20, min_lr: 1e-05, sched_on_updates: true; summary.csv; checkpoint-15/18.pth.tar, last, model_best). test_efficientnet from scratch, "
           "SGD 0.05. summary.csv lr column is 0.05 in every one of the 20 epochs. Training still works but never anneals: train_loss 1.777 -> 0.385 flattening, eval_top1 40.7 -> 93.3 (ep9) then "
           "oscillates 85.2-97.2 to the end (eval_loss bouncing 0.15-0.42, e.g. ep11 0.421, ep13 0.418, ep19 0.189); best 97.17 at ep18."))
A["sprites16_ddpm_unet"] = dict(healthy=True, bug=None, framework="diffusers + accelerate", notes=(
    "train_unconditional-style layout: logs/sprites_ddpm/ TensorBoard (Accelerator log_with=tensorboard: loss, lr, ema_decay every 10 steps + hparams.yml), checkpoint-300/ (accelerator.save_state: "
    "model.safetensors, optimizer.bin, scheduler.bin, random_states_0.pkl), final DDPMPipeline (model_index.json, unet/ with EMA weights, scheduler/), unet_ema/ (EMAModel.save_pretrained). "
    "UNet2DModel (16,32,32) on 16x16 sprites, DDPM 200 timesteps, AdamW 2e-3 cosine with 50 warmup, grad clip 1.0, 400 steps, EMA with warmup (ema_decay 0.82 -> 0.989, so EMA is updated). "
    "noise-MSE loss 1.063 (step 10) -> 0.34 (60) -> 0.23 (110) -> ~0.19 (last 50 steps 0.186-0.216, min 0.177): noise-prediction loss plateaus ~0.2 by nature. Healthy."))
A["colourshapes_cnn_keras_ft"] = dict(healthy=False, framework="keras 3 (torch backend)",
    bug="backbone.trainable = False (left over from the linear-probe recipe) is set on the loaded pretrained backbone for what is meant to be full fine-tuning, so only the 390-parameter Dense head trains.",
    notes=("Run root: base_cnn.keras (in-script pretrained BN-CNN backbone, 4 epochs on grey shapes, val acc 1.0), training_log.csv (CSVLogger), best.keras (ModelCheckpoint on val_accuracy), "
           "final.keras, model_summary.txt ('Trainable params: 390', 'Non-trainable params: 23,920'). Fine-tune task needs colour (6 classes = RGB x square/ring, chance 0.167). 15 epochs Adam 1e-3: "
           "accuracy 0.20 -> 0.63, val_accuracy 0.23 -> 0.71, val_loss 1.95 -> 0.97, still slowly creeping (linear probe on grey-shape features). Backbone weights in final.keras are identical to base_cnn.keras. "
           "Same script with the backbone trainable: val_accuracy 0.92 after epoch 1, 1.0 from epoch 4, val_loss 0.016."))
order = ["tickets_bert_tiny", "tickets6_bert_mlm_ft", "counting_gpt2_lora", "evendigits_gpt2_grpo", "digitstream_gpt2_grpo", "shapes_yolov8t", "colorblocks_yolov8t",
         "pendulum_sac", "cartpole_ppo_shaped", "shapes24_cnn_ignite", "digits16_cnn_ignite", "shapes24_bncnn_lightning", "shapes32_effnet_timm_ft",
         "textures24_effnet_timm", "sprites16_ddpm_unet", "colourshapes_cnn_keras_ft"]
out = {k: {"healthy": A[k]["healthy"], "bug": A[k]["bug"], "framework": A[k]["framework"], "notes": A[k]["notes"]} for k in order}
json.dump(out, open("/work/batch5/scripts/answers.json", "w"), indent=1)
print(len(out), sum(v["healthy"] for v in out.values()))
