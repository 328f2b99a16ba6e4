#!/usr/bin/env bash
# The third GPU table (issue 43) as two prepared calls on one H100, about 8 minutes and 3:
#
#   tools/gpu/run-second-table.sh --prepare     here, on the CPU machine: the staged-headers
#                                               binaries in .gpu-run/ (the same binaries)
#   tools/gpu/run-third-table.sh [--second]     there, carrying .gpu-run and .gpu-deps
#   HPCBENCH_BIN=build/hpcbench tools/gpu/run-third-table.sh --dry [--second] [PHASE...]
#                                               here: the same call rehearsed (validate.sh --dry);
#                                               PHASE...: only those of the call (the test suite
#                                               rehearses one phase a test, side by side)
#   tools/gpu/run-third-table.sh --plan [--second]
#                                               here: each phase's estimated seconds on the H100
#                                               (tools/gpu/estimate.py; exit 1 past 480 s / 250 s)
#
# The first call's phases in the issue's order of value, each writing its results as it finishes:
#   1-3. engine-protocol: every custom kernel against its composite first (bench_kernels
#        --check-only; a failure times nothing), then batch 32 dropout 0 (eager and --cuda-graph --fused interleaved,
#        three graphed runs between four eager, 100 timed steps each; losses against the
#        eager envelope; NVML against the memory column), batch 32 dropout 0.1, batch 4 and 8
#        against the eager runs' noise floor, then HF + compile reduce-overhead at 32, 4 and 8
#        while HPCBENCH_ENGINE_PROTOCOL_BUDGET_S (default 240) lasts
#   4.   [slot] profile: the kernel table of three graphed, fused steps at batch 32
#   5.   squad-eval: the shipped SQuAD sample with evaluation, eager against graph + fused
#   6.   [slot] strategies-graph: ddp, zero 1 and zero 3 graphed and fused at world size 1 on NCCL
#        (three rounds between four graphed, fused baselines)
#   7.   shared-gpu (pipeline and tensor over Gloo) only with HPCBENCH_THIRD_SHARED=1 (in
#        either call; the second table measured it)
# The second call (--second): strategies-graph for zero 2, fsdp full / grad-op, tensor and
# the one-stage pipeline (each graphed and fused), then adamw (the master-weight AdamW kernel
# checked again, then timed), then fp8 (the FP8 GEMM microbenchmark; moved here when
# the first call's kernel check and two more profile levers took it past 8 minutes).
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
dry=() second=0 only=()
while (($#)); do
  case "$1" in
    --dry | --plan) dry=("$1") ;;
    --second) second=1 ;;
    -*) echo "usage: tools/gpu/run-third-table.sh [--prepare | [--dry | --plan] [--second] [PHASE...]]" >&2; exit 2 ;;
    *) only+=("$1") ;;
  esac
  shift
done
# The two calls' phases in order of value (tests/gpu/CMakeLists.txt reads these two lines).
call=(engine-protocol profile squad-eval strategies-graph)
call2=(strategies-graph adamw fp8)
((second)) && call=("${call2[@]}")
# A subset only in a rehearsal: on the GPU the call is the whole table.
if ((${#only[@]})); then
  [[ ${dry[*]} == --dry ]] || { echo "run-third-table.sh: phases (${only[*]}) can be named only with --dry" >&2; exit 2; }
  for ph in "${only[@]}"; do
    [[ " ${call[*]} " == *" $ph "* ]] || { echo "run-third-table.sh: '$ph' is not a phase of the call (${call[*]})" >&2; exit 2; }
  done
  call=("${only[@]}")
fi
export HPCBENCH_BIN=${HPCBENCH_BIN:-$PWD/.gpu-run/hpcbench}
[[ -x .gpu-run/bench_kernels && ${#dry[@]} -eq 0 ]] && export HPCBENCH_BENCH_KERNELS=${HPCBENCH_BENCH_KERNELS:-$PWD/.gpu-run/bench_kernels}
# 240 s: the three protocol parts (about 140 s) and compile at batch 32 and 4 (about 55 s each);
# batch 8's compile, measured by the second table, starts only if the GPU ran faster than that.
export HPCBENCH_ENGINE_PROTOCOL_BUDGET_S=${HPCBENCH_ENGINE_PROTOCOL_BUDGET_S:-240}
export HPCBENCH_SHARED_SCOPE=${HPCBENCH_SHARED_SCOPE:-model-parallel}
export HPCBENCH_ONE_ARCHIVE=1
# The strategies-graph phase in two parts (46 runs, graph + fused, three rounds, do not fit beside
# the rest: tools/gpu/estimate.py): in the first call ddp (the first NCCL capture), zero 1 (the
# sharded optimizer) and zero 3 (sharded parameters, gathered and reduce-scattered in the capture),
# 21 runs, 107 s, the call 473 s of its 480; in the second, zero 2, fsdp full / grad-op (zero 3's
# engine again), tensor and the pipeline, 31 runs, 195 s, the call 246 s of its 250. Each part
# runs its own baseline and eager pair, so moving a strategy over moves its 5 runs: zero 2 in the
# first call takes it to 498 s.
first_half="ddp zero1 zero3" second_half="zero2 fsdp-full fsdp-grad-op tensor pipeline"

known() { grep -q "^phase_${1//-/_}()" tools/gpu/validate.sh; }
phases=()
if ((second)); then
  export HPCBENCH_SG_STRATEGIES=${HPCBENCH_SG_STRATEGIES:-$second_half}
else
  export HPCBENCH_SG_STRATEGIES=${HPCBENCH_SG_STRATEGIES:-$first_half}
fi
# A --plan's limit: the first call in 8 minutes of the session's 15, the second in 250 s, the two
# together in 12 (720 s; the machine's start and the transfers take the rest): the first is
# estimated at 473 s and the second at 246 s, 719 s together.
export HPCBENCH_PLAN_LIMIT_S=${HPCBENCH_PLAN_LIMIT_S:-$( ((second)) && echo 250 || echo 480)}
for ph in "${call[@]}"; do
  if known "$ph"; then phases+=("$ph"); else echo "run-third-table.sh: phase $ph: not in this tree's validate.sh (its slot is kept)"; fi
done
[[ ${HPCBENCH_THIRD_SHARED:-0} != 1 ]] || phases+=(shared-gpu)
exec tools/gpu/validate.sh "${dry[@]}" "${phases[@]}"
