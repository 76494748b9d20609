#!/usr/bin/env bash
# GPU verification, for a machine with an NVIDIA GPU and its driver:
#   1. builds `--release --features cuda` (the system toolkit when nvcc is on PATH, else the
#      pinned PyPI wheels through scripts/cuda-env.sh --link);
#   2. `mltriage doctor` must list a CUDA device and choose it;
#   3. `check --all --json` on every fixture run with --device cuda and --device cpu: the same
#      findings (id, probe, status, outcome) in the same order, and the same measured text once
#      the device label is normalised — numbers inside it may differ only in the last printed
#      digit (the device sums in f64, the fused CPU pass in f32 lanes: ≤ 2e-4 × rms);
#   4. times the device statistics against the host→device copy and the fused CPU pass
#      (probes/examples/bench_device_stats).
# Prints a markdown block; --record also puts it in BENCHMARKS.md as its "## GPU" section
# (scripts/benchmarks.sh keeps that section). Exits 1 when a finding differs.
#
#     scripts/gpu-check.sh [--record] [FIXTURES_DIR]      (default ../shared/fixtures)
#     env: CUDA_COMPUTE_CAP (default: the first GPU's, from nvidia-smi), BENCH_MIB (1024)
set -euo pipefail
cd "$(dirname "$0")/.."
RECORD=0
if [ "${1:-}" = "--record" ]; then
  RECORD=1
  shift
fi
FIX="${1:-../shared/fixtures}"
say() { echo "gpu-check: $*" >&2; }

if [ -z "${CUDA_COMPUTE_CAP:-}" ] && command -v nvidia-smi >/dev/null 2>&1; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
  [ -n "$cap" ] && export CUDA_COMPUTE_CAP="$cap"
fi
if command -v nvcc >/dev/null 2>&1; then
  say "system toolkit: $(nvcc --version | tail -1)"
else
  # shellcheck source=cuda-env.sh
  . scripts/cuda-env.sh --link
  say "PyPI toolkit wheels: $(nvcc --version | tail -1)"
fi
say "kernels for compute capability ${CUDA_COMPUTE_CAP:-?}"
start=$(date +%s)
cargo build --release --features cuda --bin mltriage -p mltriage >&2
cargo build --release --features cuda -p mltriage-probes --example bench_device_stats >&2
build_s=$(($(date +%s) - start))
T="${CARGO_TARGET_DIR:-target}/release"
BIN="$T/mltriage"

"$BIN" doctor >&2
"$BIN" doctor --device cuda --json >/tmp/mltriage-doctor.json
python3 - /tmp/mltriage-doctor.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
if not d["cuda"]["devices"]:
    sys.exit(f"gpu-check: doctor lists no CUDA device: {d['cuda'].get('why_none')}")
if not d["device"]["chosen"].startswith("cuda"):
    sys.exit(f"gpu-check: doctor chose {d['device']['chosen']}: {d['device']['why']}")
EOF

out="$(mktemp -d)"
fail=0
rows=""
for run in "$FIX"/*/; do
  name="$(basename "$run")"
  for dev in cuda cpu; do
    s=$(date +%s%N)
    "$BIN" check "$run" --all --json --device "$dev" >"$out/$name.$dev.json" || [ $? -eq 1 ]
    e=$(date +%s%N)
    echo $(((e - s) / 1000000)) >"$out/$name.$dev.ms"
  done
  if ! verdict="$(python3 - "$out/$name.cuda.json" "$out/$name.cpu.json" <<'EOF'
import json, re, sys
g, c = (json.load(open(p)) for p in sys.argv[1:3])
if not g["device"].startswith("cuda"):
    sys.exit(f"ran on {g['device']}: {g.get('device_note')}")
num = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
def norm(s):
    return s.replace(g["device"], "DEV").replace(c["device"], "DEV")
def key(f):
    return (f["id"], f["probe"], f["status"], f.get("outcome", ""))
gk, ck = [key(f) for f in g["findings"]], [key(f) for f in c["findings"]]
if gk != ck:
    diff = [f"{a} vs {b}" for a, b in zip(gk, ck) if a != b] or [f"{len(gk)} vs {len(ck)} findings"]
    sys.exit("findings differ: " + "; ".join(diff[:5]))
last_digit, text = 0, 0
for fg, fc in zip(g["findings"], c["findings"]):
    a, b = norm(fg["measured"]), norm(fc["measured"])
    if a == b:
        continue
    if num.sub("#", a) != num.sub("#", b):
        text += 1
        print(f"  measured text differs: {fg['id']}/{fg['probe']}: {a!r} vs {b!r}", file=sys.stderr)
        continue
    # Same text, different numbers: allowed when every number is within one unit of its
    # last printed digit.
    for x, y in zip(num.findall(a), num.findall(b)):
        if x == y:
            continue
        m = x.split("e")[0]
        unit = 10 ** -(len(m.split(".")[1]) if "." in m else 0)
        exp = int(x.split("e")[1]) if "e" in x else 0
        if abs(float(x) - float(y)) > 1.0001 * unit * 10**exp:
            text += 1
            print(f"  measured value differs: {fg['id']}/{fg['probe']}: {a!r} vs {b!r}", file=sys.stderr)
            break
    else:
        last_digit += 1
if text:
    sys.exit(f"{text} measured value(s) differ")
print(f"{len(gk)} findings identical ({last_digit} differ in the last printed digit)")
EOF
)"; then
    fail=1
    verdict="DIFFER: $verdict"
  fi
  rows+="| $name | $(cat "$out/$name.cuda.ms") | $(cat "$out/$name.cpu.ms") | $verdict |"$'\n'
  say "$name: $verdict"
done

dev_line="$("$BIN" doctor --device cuda | grep -E '^cuda' | head -1 | sed 's/^cuda *//')"
block="$out/gpu.md"
{
  echo "## GPU"
  echo
  echo "Measured by \`scripts/gpu-check.sh\` on $(date -u +%Y-%m-%d): $dev_line."
  echo "Build \`--release --features cuda\`: ${build_s} s (kernels sm_${CUDA_COMPUTE_CAP:-?})."
  echo
  echo "| fixture | check --device cuda (ms) | check --device cpu (ms) | findings |"
  echo "|---|---:|---:|---|"
  printf '%s' "$rows"
  echo
  echo "Device statistics vs the host→device copy and the fused CPU pass:"
  echo
  "$T/examples/bench_device_stats" --device cuda --mib "${BENCH_MIB:-1024}"
} >"$block"
cat "$block"
if [ "$RECORD" = 1 ]; then
  python3 - BENCHMARKS.md "$block" <<'EOF'
import re, sys
doc, block = open(sys.argv[1]).read(), open(sys.argv[2]).read().rstrip() + "\n\n"
m = re.search(r"^## GPU\n.*?(?=^## |\Z)", doc, re.S | re.M)
if m:
    doc = doc[: m.start()] + block + doc[m.end():]
else:
    i = doc.find("## Raw output")
    doc = (doc[:i] + block + doc[i:]) if i >= 0 else doc.rstrip() + "\n\n" + block
open(sys.argv[1], "w").write(doc)
EOF
  say "recorded in BENCHMARKS.md"
fi
exit $fail
