#!/usr/bin/env bash
# Regenerate every run of the batch5 corpus into OUT/runs/<name>/ (fixed seeds, CPU only).
# usage: run_all.sh OUT        (PYTHON env var overrides the interpreter)
# Each script is called as: python <script>.py OUT/runs RUN_NAME [extra args]
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export KERAS_BACKEND=torch
export OMP_NUM_THREADS=1
export TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 YOLO_OFFLINE=1
RUNS="$OUT/runs"
mkdir -p "$RUNS"
RUNS=$(cd "$RUNS" && pwd)
cd "$HERE"

run() {
  local script=$1 name=$2; shift 2
  echo "== $script $name $*  ($(date +%T))" >&2
  if ! "$PY" "$script" "$RUNS" "$name" "$@" > "$RUNS/.$name.stdout.txt" 2>&1; then
    echo "FAILED: $script $name $*  (see $RUNS/.$name.stdout.txt)" >&2; exit 1
  fi
  rm -f "$RUNS/.$name.stdout.txt"
}

# HF Trainer / PEFT / TRL
run hf_bert_tickets_resume.py   tickets_bert_tiny first      # killed at step 170 (simulated preemption)
run hf_bert_tickets_resume.py   tickets_bert_tiny resume     # relaunched with resume_from_checkpoint=True
run hf_bert_mlm_then_ft.py      tickets6_bert_mlm_ft
run peft_lora_counting.py       counting_gpt2_lora
run trl_grpo_digits.py          evendigits_gpt2_grpo frac
run trl_grpo_digits.py          digitstream_gpt2_grpo count
# Ultralytics
run yolo_shapes.py              shapes_yolov8t ok
run yolo_shapes.py              colorblocks_yolov8t rowcol
# Stable-Baselines3
run sb3_sac_pendulum.py         pendulum_sac
run sb3_ppo_cartpole.py         cartpole_ppo_shaped
# PyTorch-Ignite
run ignite_cnn.py               shapes24_cnn_ignite shapes
run ignite_cnn.py               digits16_cnn_ignite digits
# Lightning
run lit_cnn_shapes.py           shapes24_bncnn_lightning
# timm
run timm_train.py               shapes32_effnet_timm_ft finetune
run timm_train.py               textures24_effnet_timm scratch
# diffusers + accelerate
run diffusers_ddpm_sprites.py   sprites16_ddpm_unet
# Keras 3 (torch backend)
run keras_cnn_transfer.py       colourshapes_cnn_keras_ft
echo "done: $(ls "$RUNS" | wc -l) runs in $RUNS" >&2
