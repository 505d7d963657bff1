# Shared by scripts/run and scripts/test: find nvcc, configure and build with a preset.
# shellcheck shell=bash

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

# nvcc is optional; the CUDA toolkit's usual place is not always on PATH.
find_cuda() {
  if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
}

# build_preset PRESET [TARGET...]: configure (once) and build those targets (default: all).
build_preset() {
  local preset=$1
  shift
  local targets=()
  (($# > 0)) && targets=(--target "$@")
  find_cuda
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "${KERNELWATCH_JOBS:-$(nproc)}" "${targets[@]}"
}
