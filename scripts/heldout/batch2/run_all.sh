#!/bin/bash
# Regenerate every run (deletes existing run dirs first). ~5 min on 1 CPU thread.
set -e
# Usage: scripts/heldout/batch2/run_all.sh OUT_DIR  (runs land in OUT_DIR/runs; 32 MB, so not committed)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/heldout_batch2}
mkdir -p "$OUT" && cd "$OUT"
rm -rf scripts && ln -s "$HERE" scripts
PY=${PY:-python3}
export KERAS_BACKEND=torch
rm -rf runs && mkdir -p runs
$PY scripts/pt_cnn_sgd_bn.py --out runs/pt_cnn_sgd_bn
$PY scripts/pt_cnn_sgd_bn.py --out runs/pt_cnn_shuffled_labels --shuffle-train-labels
$PY scripts/pt_transformer_adamw.py --out runs/pt_transformer_adamw
$PY scripts/pt_transformer_adamw.py --out runs/pt_transformer_lr100x --lr 1e-1
$PY scripts/pt_mlp_tabular_adam.py --out runs/pt_mlp_tabular_adam
$PY scripts/pt_mlp_tabular_adam.py --out runs/pt_mlp_tabular_adam_lr5e-2 --lr 5e-2
$PY scripts/pt_gru_charlm.py --out runs/pt_gru_charlm
$PY scripts/hf_bert_finetune.py runs/hf_bert_finetune
$PY scripts/keras_finetune.py runs/keras_conv1d_finetune
$PY scripts/keras_mlp_tabular.py runs/keras_mlp_tabular
$PY scripts/keras_mlp_tabular.py runs/keras_mlp_tabular_shuffled --shuffle-train-labels
$PY scripts/fastai_tabular_ls.py runs/fastai_tabular_ls
$PY scripts/lightning_noisy_slow.py runs/lightning_noisy_slow
$PY scripts/ignite_dropout_aug.py runs/ignite_dropout_aug
$PY scripts/pt_loop_epoch_csv.py --out runs/pt_loop_epoch_csv
$PY scripts/pt_loop_epoch_csv.py --out runs/pt_loop_epoch_csv_val_raw --val-raw-pixels
$PY scripts/summarize.py
