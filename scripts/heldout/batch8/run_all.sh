#!/usr/bin/env bash
# Usage: run_all.sh OUT   -> regenerates every run into OUT/runs/<name>/
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-/work/venv-field/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" TOKENIZERS_PARALLELISM=false \
       HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_DISABLED=true PYTHONWARNINGS=ignore
mkdir -p "$OUT/runs"
RUNS="bert_tiny_cls_ft cartpole_dqn accel_mlp_regress gpt2_markov_lm ignite_tab_cls lit_blobs_cls lit_sine_regress relu_mlp_regress timm_convnext_ft torch_seq_cls"
start=$(date +%s)
for r in $RUNS; do
  rm -rf "$OUT/runs/$r"; t0=$(date +%s)
  (cd "$OUT" && "$PY" "$HERE/$r.py" "$OUT/runs/$r" > "$OUT/$r.stdout.log" 2>&1) || { echo "FAILED $r (see $OUT/$r.stdout.log)"; exit 1; }
  echo "$r: $(( $(date +%s) - t0 )) s"
done
echo "total: $(( $(date +%s) - start )) s"
