#!/usr/bin/env bash
# Regenerate every held-out batch-10 run: bash run_all.sh OUT   (or OUT=... bash run_all.sh)
set -u
OUT=${1:-${OUT:-/work/batch10}}
PY=${PY:-/work/venv-field/bin/python}
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_DISABLED=true KERAS_BACKEND=torch
mkdir -p "$OUT/runs"
RUNS="fastai_tabular_onecycle fastai_mlp_highlr_dead_relu keras_mlp_earlystop_best_is_last keras_cosine_decay_epochs_as_steps
lightning_crash_resume lightning_new_head_not_optimized ignite_foundation_frozen_then_unfreeze ignite_bn_dropout_stuck_in_eval
sb3_ppo_cartpole sb3_ppo_reach_hover_reward st_contrastive_tiny_bert timm_vit_ema_never_updated"
for name in $RUNS; do
  rm -rf "$OUT/runs/$name"
  start=$(date +%s)
  "$PY" "$HERE/$name.py" "$OUT/runs/$name" > "$OUT/$name.stdout.log" 2>&1
  rc=$?
  echo "$name rc=$rc $(( $(date +%s) - start ))s"
done
