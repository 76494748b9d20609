#!/usr/bin/env bash
# Regenerate every batch9 held-out run into OUT/runs/<name>/ (stdout logs in OUT/<name>.stdout.log).
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=${PY:-/work/venv-field/bin/python}
export OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_DISABLED=true
export KERAS_BACKEND=torch TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT/runs"
OUT="$(cd "$OUT" && pwd)"
NAMES=(
  hf_llama_charlm_warmup
  lit_shapes_cnn_resumed
  sb3_sac_pendulum
  keras_tabular_finetune
  trl_dpo_counting
  diffusers_ddpm_shapes_ema
  hf_gpt2_sft_sorting
  peft_lora_bert_classifier
  sb3_ppo_mountaincar_shaped
  ignite_timm_shapes_cosine
  keras_digits_cnn
  dqn_cartpole_custom
)
T0=$(date +%s)
for name in "${NAMES[@]}"; do
  rm -rf "$OUT/runs/$name"
  t=$(date +%s)
  (cd "$OUT" && "$PY" "$HERE/$name.py" "$OUT/runs/$name" > "$OUT/$name.stdout.log" 2>&1)
  echo "$name: $(( $(date +%s) - t ))s"
done
echo "total: $(( $(date +%s) - T0 ))s"
du -sh "$OUT/runs"
