#!/usr/bin/env bash
# Regenerate every batch7 held-out run into OUT/<run_name>/, two at a time, then verify them.
# usage: run_all.sh OUT        (PY=/path/to/python to override the interpreter)
set -euo pipefail
OUT=${1:?usage: run_all.sh OUT}
PY=${PY:-/work/venv-field/bin/python}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=${LOGS:-$(mktemp -d -t batch7_console.XXXX)}
export PY HERE OUT LOGS PYTHONHASHSEED=0 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
  KERAS_BACKEND=torch TF_CPP_MIN_LOG_LEVEL=3 MPLBACKEND=Agg

# run_name script variant   (longest first so the two lanes finish together)
JOBS="
accel_gpt2_char_1 accelerate_lm.py healthy
accel_gpt2_char_2 accelerate_lm.py accum_not_divided
frcnn_rects_1 det_torchvision.py lr100x
frcnn_rects_2 det_torchvision.py healthy
timm_effnet_ft_a timm_finetune.py optimizer_before_head_swap
timm_effnet_ft_b timm_finetune.py healthy
sb3_dqn_cartpole sb3_dqn.py -
hf_bert_resume hf_trainer_resume.py -
fastai_shapes_ft_1 fastai_finetune.py healthy
fastai_shapes_ft_2 fastai_finetune.py shuffled_train_labels
grpo_qwen2_tiny_a grpo_trl.py healthy
grpo_qwen2_tiny_b grpo_trl.py length_bonus
lit_charlm_a lightning_accum.py sched_not_stepped
lit_charlm_b lightning_accum.py healthy
ignite_mlp10_x ignite_relu.py dead_bias
ignite_mlp10_y ignite_relu.py healthy
"

one() {
  local name=$1 script=$2 variant=$3 t0=$SECONDS
  local va=(); [ "$variant" != "-" ] && va=(--variant "$variant")
  if "$PY" "$HERE/$script" --out "$OUT/$name" "${va[@]}" >"$LOGS/$name.console" 2>&1; then
    echo "ok   $name ($((SECONDS - t0))s)"
  else
    echo "FAIL $name ($((SECONDS - t0))s) -> $LOGS/$name.console"; return 1
  fi
}
export -f one

T0=$SECONDS
echo "$JOBS" | grep -v '^$' | xargs -P 2 -L 1 bash -c 'one "$@"' _ || { echo "some runs failed"; exit 1; }
echo "all runs written in $((SECONDS - T0))s; console logs in $LOGS"
"$PY" "$HERE/verify.py" "$OUT"
du -sh "$OUT"
