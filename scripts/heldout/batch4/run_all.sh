#!/usr/bin/env bash
# Regenerate every run of the batch4 corpus into OUT/runs/<name>/ (fixed seeds, CPU only).
# usage: scripts/heldout/batch4/run_all.sh OUT        (PYTHON env var overrides the interpreter)
# Each script is called as: python <script>.py OUT/runs RUN_NAME [extra args]
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export KERAS_BACKEND=torch
export OMP_NUM_THREADS=2
export TOKENIZERS_PARALLELISM=false
RUNS="$OUT/runs"
mkdir -p "$RUNS"
RUNS=$(cd "$RUNS" && pwd)
cd "$HERE"

run() {
  local script=$1 name=$2; shift 2
  echo "== $script $name $*" >&2
  if ! "$PY" "$script" "$RUNS" "$name" "$@" > "$RUNS/.$name.stdout.txt" 2>&1; then
    echo "FAILED: $script $name $*  (see $RUNS/.$name.stdout.txt)" >&2; exit 1
  fi
  rm -f "$RUNS/.$name.stdout.txt"
}

# plain PyTorch
run torch_small_tabular_overfit.py  tabular6_mlp_n160
run torch_bars_uint8.py             bars6_cnn_uint8
run torch_label_smoothing.py        tabular10_mlp_ls
run torch_mlp_dropout_eval.py       tabular8_mlp_p05
run torch_char_lm.py                charlm_gru
# Lightning
run lit_bars_shifted_val.py         bars_cnn_rigB_val
run lit_digits_tb.py                digits_cnn_lightning_tb
run lit_tabular_heavy_dropout.py    tabular6_mlp_noiseaug
run lit_color_shapes.py             color_shapes_cnn
run lit_signals_resumed.py          waveform_cnn1d_slurm first     # killed part-way (simulated preemption)
run lit_signals_resumed.py          waveform_cnn1d_slurm resume    # second process resumes from last.ckpt
# HF Trainer
run hf_tinybert_domain_ft.py        tickets_tinybert_ft
run hf_tinybert_intents.py          intent_tinybert
run hf_tinybert_lr.py               news_topic_tinybert
# Keras 3 (torch backend)
run keras_regression_raw_target.py  house_price_mlp
run keras_digits_mlp.py             digits_keras_mlp
run keras_imbalanced_binary.py      fraud_mlp_binary
echo "done: $(ls "$RUNS" | wc -l) runs in $RUNS" >&2
