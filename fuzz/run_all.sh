#!/usr/bin/env bash
# Runs every fuzz target for RUNS executions (default 1,000,000), two at a time, and copies
# any crashing input into tests/fuzz_regressions/<target>/ so `cargo test` replays it.
set -u
cd "$(dirname "$0")"
RUNS=${RUNS:-1000000}
run() {
  t=$1
  mkdir -p "corpus/$t" "artifacts/$t"
  RUSTC_BOOTSTRAP=1 cargo fuzz run -O "$t" "corpus/$t" -- -runs="$RUNS" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 > "logs/$t.log" 2>&1
  echo "$t exit $? $(grep -E '^stat::number_of_executed_units' "logs/$t.log" | awk '{print $2}') execs"
  for f in artifacts/$t/*; do [ -f "$f" ] && mkdir -p "../tests/fuzz_regressions/$t" && cp "$f" "../tests/fuzz_regressions/$t/"; done
}
bash ./seed.sh > /dev/null
mkdir -p logs
# Paired so the slow targets (a scratch file and a zip or YAML parse per input) run side by side.
targets=(${TARGETS:-torch_zip playbook_yaml metrics_text tfevents safetensors pickle safetensors_index field_logs dcp})
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run "${targets[i]}" &
  [ -n "${targets[i+1]:-}" ] && run "${targets[i+1]}" &
  wait
done
