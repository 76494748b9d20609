#!/usr/bin/env bash
# Regenerates BENCHMARKS.md: every number below is measured in this run, on this machine.
#   scripts/benchmarks.sh            # full run (≈ 5 GB of scratch files under $BENCH_DIR)
# Env: BENCH_DIR (scratch, default target/bench-data), BENCH_PYTHON (a python with torch,
# safetensors and tbparse; otherwise a throwaway venv is made from PyPI, and the Python
# anchors are skipped with a note if that fails), BENCH_GIB (checkpoint size, default 2).
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-target/bench-data}
GIB=${BENCH_GIB:-2}
mkdir -p "$DIR"
OUT=BENCHMARKS.md
say() { echo "== $*" >&2; }
# The "## GPU" section is measured on a GPU box by scripts/gpu-check.sh --record: kept as is.
GPU_SECTION=$(awk '/^## /{f = /^## GPU/} f' "$OUT" 2>/dev/null)

say "building release examples"
cargo build --release --example bench_ui -p mltriage >&2 || exit 1
cargo build --release -p mltriage-probes --example bench_stats --example bench_tfevents --example bench_sharded --example make_big_run >&2 || exit 1
cargo build --release --bin mltriage >&2 || exit 1
REL=${CARGO_TARGET_DIR:-target}/release
EX=$REL/examples

PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
  say "python anchors: creating $DIR/venv (torch, safetensors, tbparse)"
  if python3 -m venv "$DIR/venv" >&2 && "$DIR/venv/bin/pip" install -q torch safetensors tbparse numpy >&2; then
    PY="$DIR/venv/bin/python"
  else
    say "python anchors unavailable (no PyPI?): skipped"
  fi
fi
pyok() { [ -n "$PY" ] && "$PY" -c "import $1" >/dev/null 2>&1; }
val() { grep -m1 "^$1 " <<<"$2" | awk '{print $2}'; }

say "first frame and search latency"
UI=$("$EX/bench_ui")

# Start-up: the CPU (user + system) of whole `search QUERY` and `show ID` processes, p50 of 20.
say "start-up CPU of search and show"
cpu_p50() { python3 - "$@" <<'PY'
import os, resource, subprocess, sys
v = []
for _ in range(20):
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    v.append(1000 * (a.ru_utime - b.ru_utime + a.ru_stime - b.ru_stime))
v.sort(); print(f"{v[len(v)//2]:.1f}")
PY
}
START_SEARCH=$(cpu_p50 "$REL/mltriage" search "loss is nan after a few steps")
START_SHOW=$(cpu_p50 "$REL/mltriage" show L6)

# `watch` on a run being written (examples/bench_watch.rs): CPU, memory, NaN-to-event latency.
say "watch: cost while following a run (two 60 s windows, fresh and one hour in)"
cargo build --release --example bench_watch -p mltriage >&2 || exit 1
WATCH_FRESH=$("$EX/bench_watch" --bin "$REL/mltriage" --secs 60 --idle-secs 20 --trials 5 2>/dev/null)
WATCH_HOUR=$("$EX/bench_watch" --bin "$REL/mltriage" --secs 60 --idle-secs 20 --trials 3 --prefill 36000 2>/dev/null)

# The wheel (scripts/build-wheel.sh: maturin + zig, 6-17 min): only with WHEEL=1.
if [ "${WHEEL:-0}" = 1 ]; then
  say "wheel: build and install into a fresh venv"
  WB0=$(date +%s); scripts/build-wheel.sh >&2; WB1=$(date +%s)
  WHEEL_FILE=$(ls -t target/wheels/mltriage-*x86_64*.whl 2>/dev/null | head -1)
  WHEEL_TEST=$(scripts/test-wheel.sh 2>&1 | tail -20)
  WHEEL_ROW="$(basename "$WHEEL_FILE"): $(stat -c %s "$WHEEL_FILE") B; build $((WB1 - WB0)) s; $(grep -m1 -o 'pip install took [0-9.]* s' <<<"$WHEEL_TEST"); $(grep -m1 -o '[0-9]* passed, [0-9]* failed' <<<"$WHEEL_TEST") in a fresh venv"
else
  WHEEL_ROW="not built in this run (WHEEL=1 scripts/benchmarks.sh builds it: 6-17 min)"
fi

say "search quality (labelled and real-phrasing sets)"
SQ=$(cargo test --release --test search_quality -- --nocapture --test-threads 1 2>/dev/null \
  | grep -E "labelled queries:|real phrasings:|even half|odd half|held-out set|entry phrasings|fresh, (tuning|held-out) half:" | sed -E 's/^test [a-z_]+ \.\.\. //')

say "tensor statistics vs cat"
CKPT="$DIR/bf16_${GIB}g.safetensors"
if [ ! -f "$CKPT" ]; then "$EX/bench_stats" --gib "$GIB" >/dev/null; mv "$(ls -t /tmp/mltriage_bench_bf16_${GIB}g.safetensors | head -1)" "$CKPT"; fi
# cat's page-cache rate itself swings 2x between runs on a shared machine: take the median of
# three complete runs (each already best-of-3 inside) by the stats/cat ratio.
runs=()
for _ in 1 2 3; do runs+=("$("$EX/bench_stats" "$CKPT")"); done
ratio_of() { grep -m1 '^stats (fused)' <<<"$1" | grep -o '= [0-9]*%' | tr -dc 0-9; }
STATS=$(for r in "${runs[@]}"; do printf '%s\t%s\n' "$(ratio_of "$r")" "$(base64 -w0 <<<"$r")"; done | sort -n | sed -n 2p | cut -f2 | base64 -d)
STATS_ALL=$(for r in "${runs[@]}"; do grep -m1 '^stats (fused)' <<<"$r"; done)
TORCH=""
if pyok torch && pyok safetensors; then
  say "torch anchor"; cat "$CKPT" >/dev/null; TORCH=$("$PY" scripts/bench_torch_stats.py "$CKPT")
fi

say "whole processes vs cat: inspect FILE, check RUN, threads, a sharded run over a memory limit"
# Run with nothing else of ours going on; the machine's load is recorded beside the numbers.
E2E=$(MLTRIAGE_BIN=$REL/mltriage MAKE_BIG_RUN=$EX/make_big_run scripts/bench_e2e.sh "$DIR")

say "tfevents vs tbparse"
EV="$DIR/events.out.tfevents.bench.host"
TFE=$("$EX/bench_tfevents" "$EV" 775000)
TBP=""
if pyok tbparse; then say "tbparse anchor"; TBP=$("$PY" scripts/bench_tbparse.py "$EV"); fi
EV1G="$DIR/events.out.tfevents.1g.host"
TFE1G=$("$EX/bench_tfevents" "$EV1G" 19000000)

say "sharded checkpoint under a memory limit"
SH="$DIR/sharded"
"$EX/bench_sharded" "$SH" 3 6 >/dev/null  # generate once
LIMIT_MB=1024
CG=/sys/fs/cgroup/memory/mltriage-bench
if mkdir -p "$CG" 2>/dev/null && echo $((LIMIT_MB * 1024 * 1024)) > "$CG/memory.limit_in_bytes" 2>/dev/null; then
  SHARD=$(sh -c "echo \$\$ > $CG/cgroup.procs && exec $EX/bench_sharded $SH 3 6"); LIMITED="cgroup memory.limit_in_bytes = ${LIMIT_MB} MiB"
else
  SHARD=$("$EX/bench_sharded" "$SH" 3 6); LIMITED="no cgroup available: unlimited"
fi

say "a run with 10,000 checkpoints"
MANY="$DIR/many-checkpoints"
if [ ! -d "$MANY/checkpoint-9999" ]; then
  mkdir -p "$MANY"
  tiny=tests/bad_inputs/zero_size.safetensors
  for i in $(seq 0 9999); do mkdir -p "$MANY/checkpoint-$i" && cp "$tiny" "$MANY/checkpoint-$i/model.safetensors"; done
fi
# The first listing runs after the multi-GB reads above, which push the folders' metadata out
# of the cache: it is reported as the cold time. The row's verdict is on the median of three
# listings after it, cached like every other row's files.
many() { { /usr/bin/time -f "%e %M" "$REL/mltriage" inspect "$MANY" --json > "$DIR/many.json"; } 2>&1 | tail -1; }
MANY_COLD=$(many | cut -d' ' -f1)
MANY_T=$(for _ in 1 2 3; do many; done | sort -n | sed -n 2p)
MANY_N=$(grep -c '"step"' "$DIR/many.json" || true)

say "check on each shared fixture"
# `mltriage check` (every probe, CPU) on each run in ../shared/fixtures when it sits beside the
# checkout: "<run> <seconds> <peak KB>" per run; the row reports the slowest and the largest.
FIX=""
for run in ../shared/fixtures/*/; do
  [ -d "$run" ] || continue
  t=$( { /usr/bin/time -f "%e %M" "$REL/mltriage" check "$run" --device cpu > /dev/null; } 2>&1 | tail -1)
  FIX+="$(basename "$run") $t"$'\n'
done
FIX=${FIX%$'\n'}

say "diagnosis recall over the bug corpus (field, shared fixtures, generated runs)"
REC=$(python3 scripts/bugs/recall.py "$REL/mltriage" 2>&1)
say "field corpus per framework"
ABS_BIN="$(cd "$REL" && pwd)/mltriage"
FIELD=$(cd scripts/field && python3 score.py "$ABS_BIN" 2>&1 | sed -n '/^framework/,$p')

# The healthy sweep (scripts/sweep/): ≥ 150 healthy runs made by real training code. Generating
# it takes ~25 minutes and a venv with torch/transformers/trl/peft/lightning (SWEEP_PYTHON);
# an existing sweep in SWEEP_DIR is scored as it is.
SWEEP_DIR=${SWEEP_DIR:-$DIR/sweep}
if [ ! -f "$SWEEP_DIR/answers.json" ] && [ -n "${SWEEP_PYTHON:-}" ]; then
  say "healthy sweep: generating into $SWEEP_DIR (≈ 25 min)"
  (cd scripts/sweep && "$SWEEP_PYTHON" healthy_sweep.py --out "$OLDPWD/$SWEEP_DIR") >&2
fi
if [ -f "$SWEEP_DIR/answers.json" ]; then
  say "healthy sweep: scoring $SWEEP_DIR"
  SWEEP=$(python3 scripts/sweep/score.py "$REL/mltriage" "$SWEEP_DIR" 2>&1)
else
  SWEEP="no sweep at $SWEEP_DIR (set SWEEP_DIR to a generated sweep, or SWEEP_PYTHON to generate one); the committed subset:"$'\n'"$(python3 scripts/sweep/score.py "$REL/mltriage" tests/sweep 2>&1)"
fi
# The held-out corpus (tests/heldout, independent code, never tuned on): scored, not tested.
HELD=$(python3 scripts/sweep/score.py "$REL/mltriage" tests/heldout 2>&1)

say "criterion: catalog load, index build, query latency"
# One line per benchmark, "<name>\t<median> <unit>": criterion prints "name  time: [low median high]",
# or the name alone on a line before "time:" when it is long; names may contain spaces.
CRIT=$(cargo bench --bench search -- --noplot 2>/dev/null | awk '
  /time:/ { i = index($0, "time:"); head = substr($0, 1, i - 1); gsub(/^ +| +$/, "", head)
            if (head != "") name = head
            v = substr($0, index($0, "[") + 1); sub(/\].*/, "", v); split(v, t, " ")
            printf "%s\t%s %s\n", name, t[3], t[4]; name = ""; next }
  /^[^ ]/ && !/^(Found|Benchmarking|Gnuplot|WARNING)/ { name = $0; gsub(/ +$/, "", name) }')
# Median in ms of each benchmark whose name matches the regex $1, the largest of them.
ms_max() { awk -F'\t' -v re="$1" '$1 ~ re { split($2, a, " "); v = a[1]; u = a[2]
  if (u == "µs" || u == "us") v /= 1000; else if (u == "ns") v /= 1e6; else if (u == "s") v *= 1000
  if (v > m) m = v; found = 1 } END { if (found) printf "%.3f", m }' <<<"$CRIT"; }
IDX_MS=$(ms_max '^index_build$')
QMAX_MS=$(ms_max '^query/')

CAT_S=$(grep -m1 '^cat ' <<<"$STATS" | awk '{print $2}')
OURS_S=$(grep -m1 '^stats (fused)' <<<"$STATS" | awk '{print $3}')
TORCH_S=$(val torch_seconds "$TORCH")
TFE_S=$(val tfevents_ours_s "$TFE")
TBP_S=$(val tbparse_seconds "$TBP")
TFE1G_S=$(val tfevents_ours_s "$TFE1G")
TFE1G_PEAK=$(val tfevents_peak_rss_mb "$TFE1G")
TFE1G_N=$(grep -o '([0-9]*' <<<"$TFE1G" | tr -d '(')
TFE1G_MB=$(grep -m1 '^tfevents_file' <<<"$TFE1G" | awk '{print $3}')
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f×", a/b}'; else echo "n/a (anchor skipped)"; fi; }

{
  echo "# Benchmarks"
  echo
  echo "Regenerate with \`scripts/benchmarks.sh\` (release build; Python anchors from PyPI in a throwaway venv)."
  echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr); $(date -u +%Y-%m-%d)."
  echo
  echo "| target (DESIGN.md §6) | measured | verdict |"
  echo "|---|---|---|"
  FF=$(grep -o 'first_frame_ms p50 [0-9.]*' <<<"$UI" | awk '{print $3}')
  KS=$(grep -o 'search_keystroke_ms p50 [0-9.]* p99 [0-9.]*' <<<"$UI" | awk '{print $5}')
  echo "| first frame ≤ 30 ms (index built) | p50 ${FF} ms | $(awk -v x="$FF" 'BEGIN{print (x<=30)?"met":"missed"}') |"
  echo "| search ≤ 5 ms per keystroke | p99 ${KS} ms | $(awk -v x="$KS" 'BEGIN{print (x<=5)?"met":"missed"}') |"
  echo "| whole \`mltriage search QUERY\` process ≤ 30 ms of CPU (p50 of 20) | ${START_SEARCH} ms | $(awk -v x="$START_SEARCH" 'BEGIN{print (x<=30)?"met":"missed"}') |"
  echo "| whole \`mltriage show ID\` process ≤ 5 ms of CPU (p50 of 20) | ${START_SHOW} ms | $(awk -v x="$START_SHOW" 'BEGIN{print (x<=5)?"met":"missed"}') |"
  WF_CPU=$(grep -o 'CPU [0-9.]*% of one core; RSS' <<<"$WATCH_HOUR" | head -1 | awk '{print $2}')
  WF_LAT=$(grep -o 'median [0-9.]* s, max [0-9.]* s' <<<"$WATCH_FRESH" | head -1)
  echo "| \`watch\` / follow mode < 2% of one core on a run writing 10 scalars/step at 10 steps/s (one hour in) | ${WF_CPU:-?} | $(awk -v x="${WF_CPU%\%}" 'BEGIN{print (x+0<2)?"met":"missed"}') |"
  echo "| \`watch\`: a new point on screen within 1 s (NaN written → event line) | ${WF_LAT:-?} | $(grep -q 'max 0\.' <<<"$WF_LAT" && echo met || echo missed) |"
  echo "| \`pip install\` wheel (manylinux2014, CPU build) | ${WHEEL_ROW} | reported |"
  echo "| search index ready ≤ 20 ms (criterion median) | ${IDX_MS:-?} ms | $(awk -v x="${IDX_MS:-999}" 'BEGIN{print (x<=20)?"met":"missed"}') |"
  echo "| one query ≤ 2 ms (criterion median, slowest labelled query) | ${QMAX_MS:-?} ms | $(awk -v x="${QMAX_MS:-999}" 'BEGIN{print (x<=2)?"met":"missed"}') |"
  echo "| tensor stats ≥ 40% of cat's page-cache rate | cat ${CAT_S} s, ours ${OURS_S} s = $(awk -v a="$CAT_S" -v b="$OURS_S" 'BEGIN{printf "%.1f%%", 100*a/b}') | $(awk -v a="$CAT_S" -v b="$OURS_S" 'BEGIN{print (a/b>=0.4)?"met":"missed"}') |"
  echo "| tensor stats ≥ 20× the torch script | torch ${TORCH_S:-skipped} s → $(ratio "$TORCH_S" "$OURS_S") | $( [ -n "$TORCH_S" ] && awk -v a="$TORCH_S" -v b="$OURS_S" 'BEGIN{print (a/b>=20)?"met":"missed"}' || echo skipped) |"
  E_PCT=$(val e2e_inspect_pct_of_cat "$E2E"); E_X=$(val e2e_check_x_cat "$E2E")
  E_GB=$(awk -v b="$(grep -m1 '^e2e_file' <<<"$E2E" | awk '{print $3}')" 'BEGIN{printf "%.2f", b / 1e9}')
  E_RUNGB=$(awk -v b="$(grep -m1 '^e2e_run' <<<"$E2E" | awk '{print $3}')" 'BEGIN{printf "%.2f", b / 1e9}')
  echo "| \`inspect FILE\` ≥ 40% of \`cat FILE\`'s rate (whole processes, ${E_GB} GB bf16, page-cached, median of paired runs) | cat $(val e2e_inspect_cat_s "$E2E") s, inspect $(val e2e_inspect_s "$E2E") s = ${E_PCT}% | $(awk -v x="$E_PCT" 'BEGIN{print (x>=40)?"met":"missed"}') |"
  echo "| \`check RUN\` ≤ 3× \`cat\` of both checkpoints (two bf16 checkpoints, ${E_RUNGB} GB) | cat $(val e2e_check_cat_s "$E2E") s, check $(val e2e_check_s "$E2E") s = ${E_X}× | $(awk -v x="$E_X" 'BEGIN{print (x<=3)?"met":"missed"}') |"
  T_I=$(grep -m1 '^e2e_threads_inspect_s' <<<"$E2E" | cut -d' ' -f2-); T_C=$(grep -m1 '^e2e_threads_check_s' <<<"$E2E" | cut -d' ' -f2-)
  echo "| speed-up from 1 to 2 threads (\`--threads\`) | inspect ${T_I}; check ${T_C} | reported |"
  SHC=$(grep -m1 '^e2e_sharded_check_wall_cpu_peakkb' <<<"$E2E" | cut -d' ' -f2-); SHI=$(grep -m1 '^e2e_sharded_inspect_wall_cpu_peakkb' <<<"$E2E" | cut -d' ' -f2-)
  SH_GB=$(awk -v b="$(grep -m1 '^e2e_sharded ' <<<"$E2E" | awk '{print $3}')" 'BEGIN{printf "%.2f", b / 1e9}')
  SH_BIG=$(grep -m1 '^e2e_sharded ' <<<"$E2E" | grep -o 'largest tensor [0-9]*' | awk '{print $3}')
  SH_PEAK=$(awk -v a="$(cut -d' ' -f3 <<<"$SHC")" -v b="$(cut -d' ' -f3 <<<"$SHI")" 'BEGIN{print (a>b)?a:b}')
  echo "| \`check\` / \`inspect\` of a sharded run larger than the memory given (peak ≤ 2× largest tensor) | ${SH_GB} GB (2 checkpoints × 4 shards), $(grep -m1 '^e2e_sharded ' <<<"$E2E" | sed 's/.*, //'): check $(cut -d' ' -f1 <<<"$SHC") s, inspect of one index $(cut -d' ' -f1 <<<"$SHI") s; peak $(awk -v k="$SH_PEAK" 'BEGIN{printf "%.0f", k/1024}') MB vs largest tensor $(awk -v b="$SH_BIG" 'BEGIN{printf "%.0f", b/1e6}') MB | $(awk -v k="$SH_PEAK" -v b="$SH_BIG" 'BEGIN{print (k*1024 <= 2*b)?"met":"missed"}') |"
  OPC=$(grep -m1 '^e2e_optimizer_check_wall_cpu_peakkb' <<<"$E2E" | cut -d' ' -f2-); OPI=$(grep -m1 '^e2e_optimizer_inspect_wall_cpu_peakkb' <<<"$E2E" | cut -d' ' -f2-)
  if [ -n "$OPC" ]; then
    OP_GB=$(awk -v b="$(grep -m1 '^e2e_optimizer ' <<<"$E2E" | awk '{print $3}')" 'BEGIN{printf "%.2f", b / 1e9}')
    OP_FILE=$(grep -m1 '^e2e_optimizer ' <<<"$E2E" | grep -o 'optimizer.pt [0-9]*' | awk '{print $2}')
    OP_CAT=$(val e2e_optimizer_cat_s "$E2E")
    OP_PEAK=$(awk -v a="$(cut -d' ' -f3 <<<"$OPC")" -v b="$(cut -d' ' -f3 <<<"$OPI")" 'BEGIN{print (a>b)?a:b}')
    OP_X=$(awk -v c="$OP_CAT" -v t="$(cut -d' ' -f1 <<<"$OPC")" 'BEGIN{printf "%.2f", t / c}')
    echo "| \`check\` / \`inspect\` of a run with a $(awk -v b="$OP_FILE" 'BEGIN{printf "%.1f", b/1e9}') GB \`optimizer.pt\` (Adam moments streamed: ≤ 3× \`cat\`, peak far under the file) | ${OP_GB} GB run, $(grep -m1 '^e2e_optimizer ' <<<"$E2E" | sed 's/.*, //'): cat ${OP_CAT} s, check $(cut -d' ' -f1 <<<"$OPC") s = ${OP_X}×, inspect optimizer.pt $(cut -d' ' -f1 <<<"$OPI") s; peak $(awk -v k="$OP_PEAK" 'BEGIN{printf "%.0f", k/1024}') MB | $(awk -v x="$OP_X" -v k="$OP_PEAK" -v f="$OP_FILE" 'BEGIN{print (x<=3 && k*1024*10 <= f)?"met":"missed"}') |"
  fi
  echo "| tfevents ≥ 100× tbparse | tbparse ${TBP_S:-skipped} s, ours ${TFE_S} s → $(ratio "$TBP_S" "$TFE_S") | $( [ -n "$TBP_S" ] && awk -v a="$TBP_S" -v b="$TFE_S" 'BEGIN{print (a/b>=100)?"met":"missed"}' || echo skipped) |"
  echo "| peak memory ≤ 2× largest tensor (sharded, > memory limit) | $(val sharded_peak_rss_mb "$SHARD") MB peak vs $(val sharded_largest_tensor_mb "$SHARD") MB largest tensor, $(val sharded_total_gb "$SHARD") GB checkpoint, ${LIMITED} | $(awk -v a="$(val sharded_peak_rss_mb "$SHARD")" -v b="$(val sharded_largest_tensor_mb "$SHARD")" 'BEGIN{print (a<=2*b)?"met":"missed"}') |"
  if [ -n "$FIX" ]; then
    FIX_N=$(wc -l <<<"$FIX"); FIX_S=$(awk '$2 > m { m = $2 } END { print m }' <<<"$FIX"); FIX_MB=$(awk '$3 > m { m = $3 } END { printf "%.0f", m / 1024 }' <<<"$FIX")
    echo "| \`mltriage check\` on each fixture in under a second (CPU) | slowest of ${FIX_N} runs in ../shared/fixtures: ${FIX_S} s, largest peak ${FIX_MB} MB | $(awk -v t="$FIX_S" 'BEGIN{print (t<1)?"met":"missed"}') |"
  else
    echo "| \`mltriage check\` on each fixture in under a second (CPU) | ../shared/fixtures not beside the checkout | skipped |"
  fi
  echo "| a 1 GB event file parses in bounded memory | ${TFE1G_S} s, ${TFE1G_PEAK} MB peak for ${TFE1G_N} scalars in a ${TFE1G_MB} MB file (records streamed; memory follows the scalars kept, 32 B each) | $(awk -v a="$TFE1G_PEAK" -v b="$TFE1G_MB" 'BEGIN{print (a < b)?"met (peak < file size)":"missed"}') |"
  echo "| a run dir with 10,000 checkpoints lists quickly | \`mltriage inspect\` of 10,000 checkpoint-N/ folders: $(cut -d' ' -f1 <<<"$MANY_T") s (median of 3, cached; the first listing, with the folders' metadata read from disk: $MANY_COLD s), $(awk -v k="$(cut -d' ' -f2 <<<"$MANY_T")" 'BEGIN{printf "%.0f", k/1024}') MB peak | $(awk -v t="$(cut -d' ' -f1 <<<"$MANY_T")" 'BEGIN{print (t<=2)?"met (≤ 2 s)":"slow"}') |"
  echo
  cat <<'NOTE'
Tensor statistics vs `cat`: `cat` of a page-cached file is bounded by memory bandwidth, our pass by
CPU (a count per element on two cores), so the ratio moves with how much CPU this shared VM gets:
the three runs below are each best-of-3 and their spread is the honest error bar. The torch
anchor is CPU-bound too; compare its time with DESIGN.md's 25.6 s to see how fast the CPU was.
NOTE
  I_CPU=$(grep -m1 '^e2e_inspect_wall_cpu_peakkb' <<<"$E2E" | awk '{print $3}')
  C_CPU=$(grep -m1 '^e2e_check_wall_cpu_peakkb' <<<"$E2E" | awk '{print $3}')
  CAT_CPU=$(grep -m1 '^e2e_cat2_wall_cpu_peakkb' <<<"$E2E" | awk '{print $3}')
  echo
  echo "Whole processes (\`scripts/bench_e2e.sh\`): each checkpoint file is read once per process by the tensor"
  echo "pass — blocks of every tensor read with \`pread\` (no memory map), statistics and, for consecutive"
  echo "checkpoints, differences computed side by side — on rayon's work-stealing pool over 8 MB parts"
  echo "of tensors. Load average while timing: $(grep -m1 '^e2e_load_before' <<<"$E2E" | cut -d' ' -f2-) before, $(grep -m1 '^e2e_load_after' <<<"$E2E" | cut -d' ' -f2-) after"
  echo "(this VM is shared; ratios are medians of paired runs, each pair taken back to back)."
  echo "CPU time (user + system) of one run: inspect ${I_CPU} s for ${E_GB} GB, check ${C_CPU} s for ${E_RUNGB} GB, \`cat\` of"
  echo "both ${CAT_CPU} s. Scaling: the pass's work is the CPU time above, split into independent 8 MB tasks, so"
  echo "N free cores divide it by about N until the bytes themselves are the limit: at $(awk -v c="$C_CPU" -v g="$E_RUNGB" 'BEGIN{printf "%.2f", c/g}') core-seconds per GB a"
  echo "32-core box computes check's figures at ~$(awk -v c="$C_CPU" -v g="$E_RUNGB" 'BEGIN{printf "%.0f", 32*g/c}') GB/s, more than an NVMe disk (3–7 GB/s) or a page-cache"
  echo "copy delivers, so \`check\` of a 140 GB 70B checkpoint pair there is bound by reading it, as \`cat\` is. The"
  echo "1→2 thread speed-up above is what this shared 2-core VM gives; below 2× means the second core was"
  echo "busy with other work (see the load), not that the pass is serial."
  if [ -n "$GPU_SECTION" ]; then
    echo
    echo "$GPU_SECTION"
  fi
  echo
  echo "## Search quality"
  echo
  echo "\`cargo test --test search_quality -- --nocapture\`: the labelled set (tests/search_queries/core.yaml,"
  echo "domains.yaml) and the real-phrasing set (real_phrasings.yaml: problem statements from public issue"
  echo "threads and Q&A pages, each with its link; uncovered ones marked). \"flagged\" = search said"
  echo "\"no confident match\". The tuned set (real_phrasings.yaml) is what the ranking, the gate and the"
  echo "users' phrases in the playbook were shaped on; the held-out set (heldout_phrasings.yaml: other"
  echo "repositories, forums and years, labelled blind from the catalog, never tuned on, its misses never"
  echo "printed) is the one that predicts the field. Issue 28's targets are on the held-out line: covered"
  echo "top-1 >= 85%, top-3 >= 97%, flagged <= 5%; uncovered flagged >= 80%. A change that raises the tuned"
  echo "line and lowers the held-out line is a regression. The entry phrasings (entry_phrasings.yaml: 403"
  echo "statements found per entry, where the thread confirms that entry as the cause; one accepted id each,"
  echo "so near twins such as S6.1/O6 count as misses) measure how far users' words reach every entry, rare"
  echo "ones included; they were a check, not tuned on, until one weight (below) was chosen on them too."
  echo "The tuned set's third batch (156 statements from one- and two-word searches by three collectors,"
  echo "labelled blind) was first a development set: a change had to help it as well as the older lines"
  echo "before it was kept; then it joined the tuned set. The weight of the one-statement lift (\`W_PHRASE\`"
  echo "in src/search/mod.rs: an entry one of whose \`phrases:\` explains the query on its own) was chosen"
  echo "on the tuned, labelled and entry-phrasing lines together (0.1 to 1.5 tried; at 0.6 the entry"
  echo "phrasings gained 9 top-1 and 6 top-3, the labelled set 1 top-1, the tuned set 1 top-3)."
  echo
  echo "The fresh set (tests/search_fresh/: 246 statements from sources no other set used, found by"
  echo "helpers who never read tests/, labelled blind by three reviewers from the catalog's texts, never"
  echo "from search output) is the nearest measure of words the project has never seen: it scores about"
  echo "ten points below the held-out set on top-1, so the held-out line flatters the field. It is split by"
  echo "position: the tuning half's misses are printed and may be tuned on, the held-out half's never."
  echo "The rerank weights and field boosts (src/search/mod.rs) were last set by a coordinate sweep on the"
  echo "tuned set and the fresh tuning half (each weight moved alone, then the best moves together); the"
  echo "fresh held-out half and the held-out set only confirmed the choice (both +2 top-1); the entry"
  echo "phrasings lost 4 top-1 and 3 top-3 with it."
  echo
  echo '```'
  echo "$SQ"
  echo '```'
  echo
  echo "## Diagnosis recall over the whole bug corpus"
  echo
  echo "\`check\` over every run with an answer file: the field corpus (tests/field, real frameworks),"
  echo "the shared fixtures (../shared/fixtures) and the generated bug corpus (every"
  echo "tests/bugs/*/answers.json, written by scripts/bugs/*.py with real PyTorch / TRL training on CPU). A"
  echo "bug is *named* when one of its accepted entries is a fail or warn, *top-1* when the first fail/warn"
  echo "is; a healthy twin is *clean* at 0 fail and 0 warn. Misses are tests/field_check.rs's KNOWN_MISSES"
  echo "(\`accel_mlflow_no_decay_split\`: a BatchNorm CNN decaying its BN gains under AdamW, as the shared"
  echo "fixture vision_healthy does too; \`batchnorm_status\` in playbook/probes.yaml decides). Regenerate"
  echo "alone with \`cargo build -q && python3 scripts/bugs/recall.py target/debug/mltriage\`."
  echo
  echo '```'
  echo "$REC"
  echo '```'
  echo
  echo "## Watch (issue 31)"
  echo
  echo "\`examples/bench_watch.rs\`: a writer thread appends 10 scalars per step at 10 steps/s to an event file"
  echo "and a metrics.csv; \`mltriage watch --interval 1\` follows it. CPU from /proc/PID/stat (utime + stime)."
  echo
  echo '```'
  echo "$WATCH_FRESH"
  echo "$WATCH_HOUR"
  echo '```'
  echo
  echo "## The field corpus per framework (issue 26)"
  echo
  echo "\`check\` over tests/field ($(python3 -c 'import json; print(len(json.load(open("tests/field/answers.json"))))') runs written by the frameworks' own code: scripts/field/), per"
  echo "framework: healthy runs clean (0 fail, 0 warn), and bugs named (first). Ultralytics, SB3,"
  echo "CleanRL-style PPO, timm, sentence-transformers and the T5 seq2seq runs are the frameworks the"
  echo "readers were not written against (before issue 26: healthy 5/7 clean, bugs 1/12 named)."
  echo "Regenerate alone with \`cargo build -q && (cd scripts/field && python3 score.py ../../target/debug/mltriage)\`."
  echo
  echo '```'
  echo "$FIELD"
  echo '```'
  echo
  echo "## Healthy sweep (issue 25)"
  echo
  echo "\`check\` over every run of the healthy sweep (scripts/sweep/healthy_sweep.py: HF Trainer, TRL SFT /"
  echo "DPO / GRPO, Lightning, nanoGPT-style and plain loops; from scratch, fine-tuned, LoRA, resumed;"
  echo "logging every 1–500 steps; linear / cosine / constant / polynomial schedules; AdamW, one-group"
  echo "AdamW, Adafactor, SGD; fp32 and bf16; accumulation 1 and 4; with and without a step-0 save). Each"
  echo "run must give 0 fail and 0 warn, and its profile must be right or unknown against the truth the"
  echo "generator recorded. Regenerate alone with \`python3 scripts/sweep/score.py target/release/mltriage DIR\`."
  echo
  echo '```'
  echo "$SWEEP"
  echo '```'
  echo
  echo "The held-out corpus (tests/heldout: 50 healthy runs written by independent code — scripts/heldout/ —"
  echo "that no rule was tuned on; what it still flags is listed, not fixed):"
  echo
  echo '```'
  echo "$HELD"
  echo '```'
  echo
  echo "## Raw output"
  echo
  echo '```'
  echo "$UI"; echo; echo "$E2E"; echo; echo "$STATS"; echo "(median of three runs by ratio; all three:)"; echo "$STATS_ALL"; echo; echo "${TORCH:-torch anchor skipped}"; echo; echo "$TFE"; echo "${TBP:-tbparse anchor skipped}"; echo; echo "1 GB event file:"; echo "$TFE1G"; echo; echo "$SHARD"; echo; echo "check per fixture (run, seconds, peak KB):"; echo "${FIX:-skipped}"
  echo '```'
  echo
  echo "Criterion (\`cargo bench --bench search\`), median per iteration:"
  echo
  echo '```'
  echo "$CRIT"
  echo '```'
} > "$OUT"
say "wrote $OUT"
cat "$OUT"
