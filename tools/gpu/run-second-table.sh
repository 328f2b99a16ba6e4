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
  # The suite's staged-headers build (tests/gpu/staged_build.sh: no -dev packages, no
  # TensorBoard writer, as on the GPU machines), in the folder its test uses, so that a
  # suite run already made it; then bench_kernels in the same tree where the tree has it.
  PY=${HPCBENCH_PY:-python3}
  work=${HPCBENCH_STAGED_DIR:-$PWD/build-staged}
  [[ $work == /* ]] || work=$PWD/$work  # staged_build.sh checks CMake's cache for the absolute path
  tools/gpu/stage-deps.sh .gpu-deps >/dev/null
  tests/gpu/staged_build.sh "$PWD" "$work" "$PY"
  mkdir -p .gpu-run
  strip -o .gpu-run/hpcbench "$work/hpcbench"
  rm -f .gpu-run/bench_kernels
  cmake -S . -B "$work" -DHPCBENCH_BUILD_BENCH=ON >/dev/null
  if cmake --build "$work" --target help | grep -q '^bench_kernels:'; then
    cmake --build "$work" -j"$(nproc)" --target bench_kernels >/dev/null
    strip -o .gpu-run/bench_kernels "$(find "$work" -name bench_kernels -type f -perm -u+x | head -1)"
  else
    echo "run-second-table.sh: this tree has no bench_kernels target: the engine phase will say 'not built'" >&2
  fi
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
