#!/usr/bin/env bash
# The third GPU table (issue 43) as one prepared call of about 8 minutes on one H100:
#
#   tools/gpu/run-second-table.sh --prepare     here, on the CPU machine: the staged-headers
#                                               binaries in .gpu-run/ (the same binaries)
#   tools/gpu/run-third-table.sh                there, carrying .gpu-run and .gpu-deps
#   HPCBENCH_BIN=build/hpcbench tools/gpu/run-third-table.sh --dry [PHASE...]
#                                               here: the same call rehearsed (validate.sh --dry);
#                                               PHASE...: only those of the call (the test suite
#                                               rehearses one phase a test, side by side)
#
# Phases in the issue's order of value, each writing its results as it finishes:
#   1-3. engine-protocol: batch 32 dropout 0 (eager and --cuda-graph --fused interleaved,
#        three graphed runs between four eager, 100 timed steps each; losses against the
#        eager envelope; NVML against the memory column), batch 32 dropout 0.1, batch 4 and 8
#        against the eager runs' noise floor, then HF + compile reduce-overhead at 4, 8, 32
#        while HPCBENCH_ENGINE_PROTOCOL_BUDGET_S (default 300) lasts
#   4.   [slot] profile: the kernel table of three graphed, fused steps at batch 32
#   5.   squad-eval: the shipped SQuAD sample with evaluation, eager against graph + fused
#   6.   [slot] strategies-graph: every strategy graphed at world size 1 on NCCL
#   7.   [slot] fp8: the FP8 GEMM microbenchmark
#   8.   shared-gpu (pipeline and tensor over Gloo) only with HPCBENCH_THIRD_SHARED=1
# The slots are validate.sh phases that other branches add; each runs here when validate.sh
# knows it, in this order, and is skipped with a line saying so when it does not.
#
# At most 8 files come back: each phase's JSON, summary.md, validate.log, and the run folders
# of every phase in one archive (runs.tar.gz, rewritten after each phase) instead of one per
# phase (HPCBENCH_ONE_ARCHIVE=1).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${1:-} == --prepare ]]; then
  exec tools/gpu/run-second-table.sh --prepare
fi
dry=()
[[ ${1:-} == --dry ]] && { dry=(--dry); shift; }
call=(engine-protocol profile squad-eval strategies-graph fp8)
# A subset only in a rehearsal: on the GPU the call is the whole table.
if (($#)); then
  [[ ${#dry[@]} -eq 1 ]] || { echo "usage: tools/gpu/run-third-table.sh [--prepare | --dry [PHASE...]]" >&2; exit 2; }
  for ph in "$@"; do
    [[ " ${call[*]} " == *" $ph "* ]] || { echo "run-third-table.sh: '$ph' is not a phase of the call (${call[*]})" >&2; exit 2; }
  done
  call=("$@")
fi
export HPCBENCH_BIN=${HPCBENCH_BIN:-$PWD/.gpu-run/hpcbench}
[[ -x .gpu-run/bench_kernels && ${#dry[@]} -eq 0 ]] && export HPCBENCH_BENCH_KERNELS=${HPCBENCH_BENCH_KERNELS:-$PWD/.gpu-run/bench_kernels}
export HPCBENCH_ENGINE_PROTOCOL_BUDGET_S=${HPCBENCH_ENGINE_PROTOCOL_BUDGET_S:-300}
export HPCBENCH_SHARED_SCOPE=${HPCBENCH_SHARED_SCOPE:-model-parallel}
export HPCBENCH_ONE_ARCHIVE=1

known() { grep -q "^phase_${1//-/_}()" tools/gpu/validate.sh; }
phases=()
for ph in "${call[@]}"; do
  if known "$ph"; then phases+=("$ph"); else echo "run-third-table.sh: phase $ph: not in this tree's validate.sh (its slot is kept)"; fi
done
[[ ${HPCBENCH_THIRD_SHARED:-0} == 1 ]] && phases+=(shared-gpu)
exec tools/gpu/validate.sh "${dry[@]}" "${phases[@]}"
