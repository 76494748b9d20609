#!/usr/bin/env bash
# Tests mltriage.capture (python/tests/) with a Python that has torch, transformers and
# lightning ($MLTRIAGE_PY, default /work/venv-field/bin/python): tiny CPU models under the HF
# Trainer, Lightning and a plain loop; each captured run is checked with the built mltriage
# binary ($MLTRIAGE_BIN, else the newer of target/release and target/debug; built here if
# neither exists). Uses pytest when the Python has it, else unittest.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${MLTRIAGE_PY:-/work/venv-field/bin/python}"
if ! "$py" -c 'import torch, transformers' 2>/dev/null; then
  echo "test-capture: $py lacks torch/transformers; set MLTRIAGE_PY" >&2
  exit 2
fi
if [ -z "${MLTRIAGE_BIN:-}" ] && [ ! -x target/release/mltriage ] && [ ! -x target/debug/mltriage ]; then
  cargo build --bin mltriage
fi
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
if "$py" -c 'import pytest' 2>/dev/null; then
  exec "$py" -m pytest -q python/tests "$@"
else
  exec "$py" -m unittest discover -s python/tests -v "$@"
fi
