# shellcheck shell=bash
# Source this (`. scripts/cuda-env.sh [--link]`) to build `--features cuda` without a system
# CUDA toolkit: it installs NVIDIA's pinned CUDA 13.4 wheels from PyPI into a venv outside the
# clone (cached: reinstalled only when the pins change) and exports what candle's build needs:
#   PATH (nvcc first), CUDA_ROOT (the toolkit root inside the venv), CUDA_COMPUTE_CAP (default 90).
# cudarc reads the toolkit version from `nvcc --version` (13.4 is one it knows; 13.5 is not, so
# the pins stay on 13.4 — or set CUDARC_CUDA_VERSION=13040 with newer wheels).
#
# --link also installs the libraries a final link needs (cuBLAS, cuRAND, NVRTC: ~520 MB more to
# download) and builds a link directory exported as CUDA_PATH: the unversioned names
# (libcudart.so, libcublas.so …) pointing at the wheels' versioned libraries, and a driver
# *link stub* lib/stubs/libcuda.so (soname libcuda.so.1) generated here from the driver
# functions cudarc declares — the wheels ship no libcuda stub. At run time the real driver's
# libcuda.so.1 is loaded instead, and the wheels' libraries must be found
# (LD_LIBRARY_PATH="$MLTRIAGE_CUDA_LIBS", exported too).
#
# Environment: MLTRIAGE_CUDA_VENV (default ~/.cache/mltriage-ci/cuda-13.4), CUDA_COMPUTE_CAP.

_mltriage_cuda_env() {
  local link=0
  [ "${1:-}" = "--link" ] && link=1
  local venv="${MLTRIAGE_CUDA_VENV:-$HOME/.cache/mltriage-ci/cuda-13.4}"
  # Compile set: nvcc with its front end (crt), NVVM, the runtime headers and CCCL (~130 MB).
  local compile=(
    nvidia-cuda-nvcc==13.4.92 nvidia-cuda-crt==13.4.92 nvidia-nvvm==13.4.92
    nvidia-cuda-runtime==13.4.92 nvidia-cuda-cccl==13.3.5.0.6
  )
  # Link set: the libraries cudarc links against (dynamic linking).
  local linkset=(nvidia-cublas==13.4.3.11 nvidia-curand==10.4.4.72 nvidia-cuda-nvrtc==13.4.92)
  local want=("${compile[@]}")
  [ "$link" = 1 ] && want+=("${linkset[@]}")
  local stamp="$venv/.mltriage-pins"
  local have=""
  [ -f "$stamp" ] && have="$(cat "$stamp")"
  if ! printf '%s\n' "${want[@]}" | while read -r p; do grep -qxF "$p" <<<"$have" || exit 1; done; then
    echo "cuda-env: installing ${want[*]} into $venv" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return 1
    "$venv/bin/python" -m pip install -q --no-deps "${want[@]}" || return 1
    printf '%s\n' "${want[@]}" $have | sort -u >"$stamp"
  fi
  local root
  root="$(echo "$venv"/lib/python3*/site-packages/nvidia/cu13)"
  if [ ! -x "$root/bin/nvcc" ]; then
    echo "cuda-env: no nvcc under $root" >&2
    return 1
  fi
  export PATH="$root/bin:$PATH"
  export CUDA_ROOT="$root"
  export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
  export MLTRIAGE_CUDA_LIBS="$root/lib"
  if [ "$link" = 1 ]; then
    local ln="$venv/link"
    mkdir -p "$ln/lib/stubs"
    local lib
    for lib in cudart cublas cublasLt curand nvrtc; do
      local real
      real="$(ls "$root/lib/lib$lib.so."* 2>/dev/null | grep -v builtins | head -1)"
      if [ -z "$real" ]; then
        echo "cuda-env: lib$lib.so.* missing under $root/lib" >&2
        return 1
      fi
      ln -sf "$real" "$ln/lib/lib$lib.so"
    done
    if [ ! -f "$ln/lib/stubs/libcuda.so" ]; then
      local src
      src="$(ls -d "$HOME"/.cargo/registry/src/*/cudarc-0.19.10/src/driver/sys/mod.rs 2>/dev/null | head -1)"
      if [ -z "$src" ]; then
        (cd "$(dirname "${BASH_SOURCE[0]}")/.." && cargo fetch -q) || return 1
        src="$(ls -d "$HOME"/.cargo/registry/src/*/cudarc-0.19.10/src/driver/sys/mod.rs | head -1)"
      fi
      # Every driver entry point cudarc can call, as a function returning CUDA_ERROR_UNKNOWN.
      grep -oE '^pub unsafe fn cu[A-Za-z0-9_]+' "$src" | awk '{print $4}' | sort -u |
        awk '{print "int " $1 "(void) { return 999; }"}' >"$ln/libcuda_stub.c"
      cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$ln/lib/stubs/libcuda.so" "$ln/libcuda_stub.c" || return 1
    fi
    export CUDA_PATH="$ln"
    export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

_mltriage_cuda_env "$@"
