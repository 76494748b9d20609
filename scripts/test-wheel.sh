#!/usr/bin/env bash
# Installs ONLY the built wheel (target/wheels/mltriage-*.whl, from scripts/build-wheel.sh)
# into a fresh venv outside the clone and runs what a user runs first: `mltriage --version`,
# `mltriage search`, `mltriage check` on a fixture run, and `import mltriage.capture` (which
# must import without torch). Prints the wheel's size and the install time.
#   scripts/test-wheel.sh [WHEEL]
set -euo pipefail
cd "$(dirname "$0")/.."
whl="${1:-$(ls -t target/wheels/mltriage-*manylinux*x86_64*.whl 2>/dev/null | head -1)}"
if [ -z "$whl" ] || [ ! -f "$whl" ]; then
  echo "test-wheel: no wheel in target/wheels (run scripts/build-wheel.sh)" >&2
  exit 2
fi
fixture=../shared/fixtures/hf_healthy
[ -d "$fixture" ] || fixture=tests/field/hf_healthy
venv=$(mktemp -d /tmp/mltriage-wheel-test.XXXXXX)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
size=$(stat -c %s "$whl")
t0=$(date +%s.%N)
"$venv/bin/pip" install -q --no-index --no-deps "$whl"
t1=$(date +%s.%N)
echo "test-wheel: $(basename "$whl"): $((size / 1024)) KiB; pip install took $(python3 -c "print(f'{$t1 - $t0:.2f}')") s"
bin="$venv/bin/mltriage"
[ -x "$bin" ] || { echo "test-wheel: the wheel put no mltriage on the venv's PATH" >&2; exit 1; }
fail=0
run() { # NAME CMD...: runs, prints ok/FAIL
  local name=$1; shift
  if out=$("$@" 2>&1); then echo "ok   $name"; else echo "FAIL $name"; echo "$out" | tail -5; fail=$((fail + 1)); fi
}
run "mltriage --version" bash -c "'$bin' --version | grep -q '^mltriage '"
run "mltriage search \"loss is nan\"" bash -c "'$bin' search 'loss is nan' --json | '$venv/bin/python' -c 'import json,sys; assert json.load(sys.stdin)[\"hits\"]'"
run "mltriage check $fixture" bash -c "'$bin' check '$fixture' --json > '$venv/check.json'; rc=\$?; [ \$rc -le 1 ] && '$venv/bin/python' -c 'import json; d=json.load(open(\"$venv/check.json\")); assert d[\"findings\"]'"
run "check names the capture hook a run lacks" bash -c "'$bin' check tests/field/hf_healthy | tr -s ' \n' '  ' | grep -q 'need a batch dump.*mltriage.capture.HFCallback()'"
# The README's walk-through on the demo run, as a new user types it.
run "README: mltriage check assets/demo-run" bash -c "'$bin' check assets/demo-run; [ \$? -eq 1 ]"
run "README: mltriage show S5.1" bash -c "'$bin' show S5.1 | grep -q S5.1"
run "README: mltriage walk stability assets/demo-run" bash -c "'$bin' walk stability assets/demo-run | grep -q 'Conclusion: S5.1'"
run "import mltriage.capture (no torch needed)" "$venv/bin/python" -c "import sys, mltriage.capture as c; assert c.HFCallback and c.Capture; assert 'torch' not in sys.modules"
run "the binary needs glibc <= 2.17" bash -c "! objdump -T '$bin' 2>/dev/null | grep -oE 'GLIBC_[0-9.]+' | sort -Vu | awk -F_ '{print \$2}' | while read v; do [ \"\$(printf '%s\n2.17\n' \"\$v\" | sort -V | tail -1)\" = 2.17 ] || echo \"\$v\"; done | grep -q ."
echo "$((9 - fail)) passed, $fail failed"
[ "$fail" = 0 ]
