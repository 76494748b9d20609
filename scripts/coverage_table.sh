#!/usr/bin/env bash
# Regenerate the README's signature-coverage table from `mltriage probes --coverage --markdown`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${MLTRIAGE:-cargo run -q --}"
table="$($bin probes --coverage --markdown)"
python3 - "$table" <<'PY'
import sys
start = "<!-- coverage:start (mltriage probes --coverage --markdown) -->\n"
end = "<!-- coverage:end -->"
s = open("README.md").read()
a = s.index(start) + len(start)
b = s.index(end, a)
open("README.md", "w").write(s[:a] + sys.argv[1].strip() + "\n" + s[b:])
PY
