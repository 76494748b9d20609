#!/usr/bin/env bash
# Regenerate every run of the batch6 corpus into OUT/runs/<name>/ (fixed seeds, CPU only).
# usage: run_all.sh OUT        (PYTHON env var overrides the interpreter)
# Each script is called as: python <script>.py OUT/runs RUN_NAME [extra args]
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export KERAS_BACKEND=torch
export OMP_NUM_THREADS=1
export TOKENIZERS_PARALLELISM=false
export YOLO_OFFLINE=1
RUNS="$OUT/runs"
mkdir -p "$RUNS"
RUNS=$(cd "$RUNS" && pwd)
cd "$HERE"

run() {
  local script=$1 name=$2; shift 2
  echo "== $script $name $*" >&2
  rm -rf "$RUNS/$name"
  if ! "$PY" "$script" "$RUNS" "$name" "$@" > "$RUNS/.$name.stdout.txt" 2>&1; then
    echo "FAILED: $script $name $*  (see $RUNS/.$name.stdout.txt)" >&2; exit 1
  fi
  rm -f "$RUNS/.$name.stdout.txt"
}

# Ultralytics
run yolo_shapes.py            shapes2_yolov8tiny_scratch      correct
run yolo_shapes.py            colorboxes_yolov8tiny_scratch   swapped
# pytorch-ignite
run ignite_blobs_clf.py       blobs8_mlp_ignite               ok
run ignite_blobs_clf.py       clusters8_mlp_ignite_sgd        copy
# TRL GRPO
run trl_grpo_words.py         fruitwords_gpt2tiny_grpo        fraction
run trl_grpo_words.py         fruitlist_gpt2tiny_grpo         length
# Lightning
run lit_pretrain_finetune.py  waveform_cnn1d_pretrain_ft
run lit_cosine_manual.py      tabular5_mlp_lightning_manualopt
# plain PyTorch
run torch_blobs_mlp.py        blobs10_mlp_adam                1e-3
run torch_blobs_mlp.py        blobs10_relu_mlp4               1e-1
echo "done: $(ls "$RUNS" | wc -l) runs in $RUNS" >&2
