#!/usr/bin/env bash
# Builds the PyPI wheel (CPU build of the `mltriage` binary + python/mltriage) into
# target/wheels/ with maturin's binary bindings, for manylinux2014 (glibc >= 2.17). When this
# host's glibc is newer than 2.17 the link goes through zig (`ziglang` from PyPI) so the binary
# needs no newer glibc symbols. maturin and ziglang are installed into a build venv outside the
# clone ($MLTRIAGE_WHEEL_VENV, default ~/.cache/mltriage-wheel/venv); the build uses its own
# target dir ($MLTRIAGE_WHEEL_TARGET, default target/wheel-build) so the zig-linked build never
# invalidates the ordinary one.
#
#   scripts/build-wheel.sh                 # x86_64 manylinux2014
#   MLTRIAGE_WHEEL_TARGETS="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu" scripts/build-wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MLTRIAGE_WHEEL_VENV:-$HOME/.cache/mltriage-wheel/venv}"
if [ ! -x "$venv/bin/maturin" ] || ! "$venv/bin/python" -c 'import ziglang' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q 'maturin>=1.5,<2.0' ziglang
fi
export PATH="$venv/bin:$PATH"
export CARGO_TARGET_DIR="${MLTRIAGE_WHEEL_TARGET:-$PWD/target/wheel-build}"

# glibc of this host: zig is needed to link against 2.17 when it is newer.
glibc=$(ldd --version 2>&1 | head -1 | grep -oE '[0-9]+\.[0-9]+$' || echo 0)
zig=()
if [ "$(printf '%s\n2.17\n' "$glibc" | sort -V | tail -1)" != "2.17" ]; then
  zig=(--zig)
fi

targets="${MLTRIAGE_WHEEL_TARGETS:-x86_64-unknown-linux-gnu}"
start=$(date +%s)
for t in $targets; do
  rustup target list --installed 2>/dev/null | grep -qx "$t" || rustup target add "$t"
  echo "build-wheel: $t (glibc $glibc on this host${zig:+, linking with zig})" >&2
  maturin build --release --target "$t" --compatibility manylinux2014 "${zig[@]}" \
    --out target/wheels "$@"
done
echo "build-wheel: took $(($(date +%s) - start)) s" >&2
ls -l target/wheels/*.whl
