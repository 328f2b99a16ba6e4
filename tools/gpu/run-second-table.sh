#!/usr/bin/env bash
# The second GPU table (issue 32) as one prepared call of about 8 minutes on one H100:
#
#   tools/gpu/run-second-table.sh --prepare     here, on the CPU machine: the staged-headers
#                                               binaries in .gpu-run/ (hpcbench, bench_kernels)
#   tools/gpu/run-second-table.sh               there, carrying .gpu-run and .gpu-deps
#   HPCBENCH_BIN=build/hpcbench tools/gpu/run-second-table.sh --dry
#                                               here: the same call rehearsed (validate.sh --dry)
#
# There it runs validate.sh's phases in the issue's order of importance, each writing its
# results as it finishes (the engine phase after each batch), so that a call cut short still
# returns what it measured: engine (kernel numerics, then batch 8, 32, 4; no batch started
# past HPCBENCH_ENGINE_BUDGET_S, default 240), strategies (every strategy with
# --keep-collectives at world size 1 beside PyTorch's FSDP2, pipeline and tensor included),
# shared-gpu with HPCBENCH_SHARED_SCOPE=model-parallel (pipeline gpipe/1f1b over 2 stages and
# tensor tp 2 on 2 ranks over Gloo; the other strategies' shared runs passed in the first GPU
# run). 8 files in $OUT: three phase JSONs, three run archives, summary.md, validate.log.
# A carried binary that does not load there is rebuilt from .gpu-deps (minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${1:-} == --prepare ]]; then
  PY=${HPCBENCH_PY:-python3}
  tools/gpu/stage-deps.sh .gpu-deps >/dev/null
  prefix=$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  # As the GPU machines build: staged headers only, no TensorBoard writer (no protobuf there).
  [[ -f build-staged/build.ninja ]] ||
    cmake -S . -B build-staged -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DHPCBENCH_DEPS_DIR="$PWD/.gpu-deps" -DHPCBENCH_BUILD_TESTS=OFF -DHPCBENCH_BUILD_BENCH=ON \
      -DHPCBENCH_WITH_TENSORBOARD=OFF -DTORCH_CUDA_ARCH_LIST=9.0 >build-staged.configure.log
  targets=(hpcbench)
  if cmake --build build-staged --target help | grep -q '^bench_kernels:'; then targets+=(bench_kernels); fi
  cmake --build build-staged -j"$(nproc)" --target "${targets[@]}"
  mkdir -p .gpu-run
  strip -o .gpu-run/hpcbench build-staged/hpcbench
  kb=$(find build-staged -name bench_kernels -type f -perm -u+x | head -1)
  if [[ -n $kb ]]; then strip -o .gpu-run/bench_kernels "$kb"; else rm -f .gpu-run/bench_kernels; fi
  .gpu-run/hpcbench --version
  ls -l .gpu-run
  echo "carry .gpu-run and .gpu-deps; on the GPU machine run: tools/gpu/run-second-table.sh"
  exit 0
fi

dry=()
[[ ${1:-} == --dry ]] && { dry=(--dry); shift; }
[[ $# -eq 0 ]] || { echo "usage: tools/gpu/run-second-table.sh [--prepare | --dry]" >&2; exit 2; }
export HPCBENCH_BIN=${HPCBENCH_BIN:-$PWD/.gpu-run/hpcbench}
[[ -x .gpu-run/bench_kernels && ${#dry[@]} -eq 0 ]] && export HPCBENCH_BENCH_KERNELS=${HPCBENCH_BENCH_KERNELS:-$PWD/.gpu-run/bench_kernels}
export HPCBENCH_ENGINE_BUDGET_S=${HPCBENCH_ENGINE_BUDGET_S:-240}
export HPCBENCH_SHARED_SCOPE=${HPCBENCH_SHARED_SCOPE:-model-parallel}
export HPCBENCH_SHARED_STEPS=${HPCBENCH_SHARED_STEPS:-8}
exec tools/gpu/validate.sh "${dry[@]}" engine strategies shared-gpu
