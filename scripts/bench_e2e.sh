#!/usr/bin/env bash
# End-to-end benchmark of what users run (DESIGN.md §6): whole `mltriage inspect FILE` and
# `mltriage check RUN` processes timed side by side with `cat` of the same files, in the same
# run, page-cached; 1 vs 2 threads; and a sharded run larger than the memory the process gets.
# Sourced by scripts/benchmarks.sh (prints raw "key value" lines on stdout); also runs alone:
#   scripts/bench_e2e.sh [BENCH_DIR]        (needs target/release/mltriage and make_big_run)
set -uo pipefail
DIR=${1:-${BENCH_DIR:-target/bench-data}}
BIN=${MLTRIAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/mltriage}
GEN=${MAKE_BIG_RUN:-${CARGO_TARGET_DIR:-target}/release/examples/make_big_run}
REPS=${BENCH_REPS:-5}
mkdir -p "$DIR"

# Microseconds a command takes (output discarded).
us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000)); }
# "wall_s cpu_s peak_kb" of one run.
cpu() { /usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}'; }
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

RUN="$DIR/big-run"
[ -f "$RUN/checkpoint-100/model.safetensors" ] || "$GEN" "$RUN" 1 >&2
A="$RUN/checkpoint-0/model.safetensors"
B="$RUN/checkpoint-100/model.safetensors"
echo "e2e_file $A $(stat -c %s "$A") bytes"
echo "e2e_run $RUN $(($(stat -c %s "$A") + $(stat -c %s "$B"))) bytes in two checkpoints"
echo "e2e_cpus $(nproc)"
echo "e2e_load_before $(load)"
cat "$A" "$B" >/dev/null
"$BIN" check "$RUN" --device cpu >/dev/null 2>&1 # warm the binary and the page cache

# Paired runs: cat then ours, REPS times; ratios per pair, medians reported.
ins_pct=(); chk_x=(); cat1=(); ins=(); cat2=(); chk=()
for _ in $(seq "$REPS"); do
  c=$(us cat "$A"); t=$(us "$BIN" inspect "$A")
  cat1+=("$c"); ins+=("$t"); ins_pct+=("$(awk -v c="$c" -v t="$t" 'BEGIN{printf "%.1f", 100 * c / t}')")
  c=$(us cat "$A" "$B"); t=$(us "$BIN" check "$RUN" --device cpu)
  cat2+=("$c"); chk+=("$t"); chk_x+=("$(awk -v c="$c" -v t="$t" 'BEGIN{printf "%.2f", t / c}')")
done
echo "e2e_inspect_cat_s $(printf '%s\n' "${cat1[@]}" | median | awk '{printf "%.3f", $1 / 1e6}')"
echo "e2e_inspect_s $(printf '%s\n' "${ins[@]}" | median | awk '{printf "%.3f", $1 / 1e6}')"
echo "e2e_inspect_pct_of_cat $(printf '%s\n' "${ins_pct[@]}" | median) (pairs: ${ins_pct[*]})"
echo "e2e_check_cat_s $(printf '%s\n' "${cat2[@]}" | median | awk '{printf "%.3f", $1 / 1e6}')"
echo "e2e_check_s $(printf '%s\n' "${chk[@]}" | median | awk '{printf "%.3f", $1 / 1e6}')"
echo "e2e_check_x_cat $(printf '%s\n' "${chk_x[@]}" | median) (pairs: ${chk_x[*]})"
# CPU seconds (user + system) and peak RSS of one run each: what more cores can divide.
echo "e2e_inspect_wall_cpu_peakkb $(cpu "$BIN" inspect "$A")"
echo "e2e_check_wall_cpu_peakkb $(cpu "$BIN" check "$RUN" --device cpu)"
echo "e2e_cat2_wall_cpu_peakkb $(cpu cat "$A" "$B")"

# 1 vs 2 threads, medians of REPS each (interleaved so load drifts hit both alike).
i1=(); i2=(); k1=(); k2=()
for _ in $(seq "$REPS"); do
  i1+=("$(us "$BIN" --threads 1 inspect "$A")"); i2+=("$(us "$BIN" --threads 2 inspect "$A")")
  k1+=("$(us "$BIN" --threads 1 check "$RUN" --device cpu)"); k2+=("$(us "$BIN" --threads 2 check "$RUN" --device cpu)")
done
m() { printf '%s\n' "$@" | median | awk '{printf "%.3f", $1 / 1e6}'; }
echo "e2e_threads_inspect_s 1:$(m "${i1[@]}") 2:$(m "${i2[@]}") speedup $(awk -v a="$(m "${i1[@]}")" -v b="$(m "${i2[@]}")" 'BEGIN{printf "%.2f", a / b}')"
echo "e2e_threads_check_s 1:$(m "${k1[@]}") 2:$(m "${k2[@]}") speedup $(awk -v a="$(m "${k1[@]}")" -v b="$(m "${k2[@]}")" 'BEGIN{printf "%.2f", a / b}')"
echo "e2e_load_after $(load)"

# A sharded two-checkpoint run larger than the memory given to the process (cgroup v1 limit
# on RSS + page cache): it must stream (peak ≤ 2× the largest tensor) and not fail.
SH="$DIR/big-run-sharded"
[ -f "$SH/checkpoint-100/model.safetensors.index.json" ] || "$GEN" "$SH" 1.6 4 >&2
SH_BYTES=$(du -cb "$SH"/checkpoint-*/*.safetensors | tail -1 | cut -f1)
LIMIT_MB=${BENCH_LIMIT_MB:-1024}
CG=/sys/fs/cgroup/memory/mltriage-bench-e2e
if mkdir -p "$CG" 2>/dev/null && echo $((LIMIT_MB * 1024 * 1024)) >"$CG/memory.limit_in_bytes" 2>/dev/null; then
  LIM="cgroup memory.limit_in_bytes = ${LIMIT_MB} MiB"
  # Runs a command inside the limited cgroup (the shell joins it, then becomes the command).
  limited() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
else
  LIM="no cgroup available: unlimited"
  limited() { "$@"; }
fi
echo "e2e_sharded $SH $SH_BYTES bytes in 2 checkpoints x 4 shards, largest tensor $((32000 * 2048 * 2)) bytes, $LIM"
c=$(us limited cat "$SH"/checkpoint-0/*.safetensors "$SH"/checkpoint-100/*.safetensors)
echo "e2e_sharded_cat_s $(awk -v c="$c" 'BEGIN{printf "%.3f", c / 1e6}')"
echo "e2e_sharded_check_wall_cpu_peakkb $(limited /usr/bin/time -f "%e %U %S %M" "$BIN" check "$SH" --device cpu 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}')"
echo "e2e_sharded_inspect_wall_cpu_peakkb $(limited /usr/bin/time -f "%e %U %S %M" "$BIN" inspect "$SH/checkpoint-100/model.safetensors.index.json" 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}')"

# A run whose optimizer.pt (~3 GB of fp32 Adam moments) is larger than the memory given: its
# moments must be streamed like weights (peak RSS far under the file) at ≤ 3× `cat` of the run.
# Generated by scripts/make_big_optimizer.py with a Python that has torch (OPT_PYTHON).
OPY=${OPT_PYTHON:-${BENCH_PYTHON:-python3}}
OR="$DIR/big-optimizer"
if [ -f "$OR/checkpoint-100/optimizer.pt" ] || "$OPY" scripts/make_big_optimizer.py "$OR" >&2; then
  OPT="$OR/checkpoint-100/optimizer.pt"
  OR_BYTES=$(du -cb "$OR"/checkpoint-100/* | tail -1 | cut -f1)
  echo "e2e_optimizer $OR $OR_BYTES bytes, optimizer.pt $(stat -c %s "$OPT") bytes, $LIM"
  cat "$OR"/checkpoint-100/* >/dev/null
  c=$(us limited cat "$OR"/checkpoint-100/*)
  echo "e2e_optimizer_cat_s $(awk -v c="$c" 'BEGIN{printf "%.3f", c / 1e6}')"
  echo "e2e_optimizer_check_wall_cpu_peakkb $(limited /usr/bin/time -f "%e %U %S %M" "$BIN" check "$OR" --device cpu 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}')"
  echo "e2e_optimizer_inspect_wall_cpu_peakkb $(limited /usr/bin/time -f "%e %U %S %M" "$BIN" inspect "$OPT" 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}')"
else
  echo "e2e_optimizer skipped (no torch in $OPY)"
fi
rmdir "$CG" 2>/dev/null || true
