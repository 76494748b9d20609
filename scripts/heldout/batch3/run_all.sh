#!/usr/bin/env bash
# Regenerate every run of the batch3 corpus into OUT/runs/<name>/ (fixed seeds).
# usage: scripts/run_all.sh OUT        (PYTHON env var overrides the interpreter)
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export KERAS_BACKEND=torch
export OMP_NUM_THREADS=1
RUNS="$OUT/runs"
mkdir -p "$RUNS"
cd "$HERE"

run() {
  local script=$1; shift
  echo "== $script $*" >&2
  if ! "$PY" "$script" "$RUNS" "$@" > "$RUNS/.$(echo "${@: -1}").stdout.txt" 2>&1; then
    echo "FAILED: $script $*  (see $RUNS/.${@: -1}.stdout.txt)" >&2; exit 1
  fi
  rm -f "$RUNS/.${@: -1}.stdout.txt"
}

# Keras: one tabular MLP family (one healthy, four single-change bugs)
run keras_sensors_mlp.py lr_too_high        sensors_mlp_r1
run keras_sensors_mlp.py healthy            sensors_mlp_r2
run keras_sensors_mlp.py linear_probs       sensors_mlp_r3
run keras_sensors_mlp.py val_unscaled       sensors_mlp_r4
run keras_sensors_mlp.py softmax_fromlogits sensors_mlp_r5
# Keras: digits Conv2D family (one healthy, two single-change bugs)
run keras_digits_cnn.py val_shifted         digits_cnn_sgd_r1
run keras_digits_cnn.py healthy             digits_cnn_sgd_r2
run keras_digits_cnn.py permuted_train      digits_cnn_sgd_r3
# Keras: other healthy runs
run keras_finetune.py      digits_finetune_frozen_base
run keras_imbalanced.py    imbalanced_3class_rmsprop
run keras_small_overfit.py small_data_wide_mlp
run keras_noisy_labels.py  noisy4_adamw_cosine
run keras_binary_conv1d.py burst_conv1d_binary
run keras_heavy_reg.py     blobs20_dropout_noise
# Lightning
run lightning_mlp.py permuted_train lightning_tabular_r1
run lightning_mlp.py healthy        lightning_tabular_r2
run lightning_cnn_tb.py             lightning_bars_cnn_tb
echo "done: $(ls "$RUNS" | wc -l) runs in $RUNS" >&2
