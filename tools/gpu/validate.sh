#!/usr/bin/env bash
# The prepared validation of hpcbench on one GPU: phases that each fit one
# 10-minute call on a 16-core one-GPU machine with no network (python3 with
# torch, transformers, lightning; cmake, ninja, nvcc; no Debian -dev packages).
#
#   tools/gpu/validate.sh [--dry | --plan] PHASE...
#       PHASE: build engine baseline precision strategies shared-gpu, or all (that order), or one
#       not in all: engine-protocol squad-eval profile fp8 strategies-graph deterministic
#   --plan      run nothing: list each phase's commands and estimate its seconds on an H100 from
#               the recorded runs (tools/gpu/estimate.py; HPCBENCH_PLAN_LIMIT_S: exit 1 past it)
#
#   build       configure and build against the machine's torch with the staged
#               headers (.gpu-deps from tools/gpu/stage-deps.sh; carry it)
#   engine      the fast engine: bench_kernels --check-only (every custom kernel against
#               its ATen composite; a failure stops the phase), then bert-base seq 384 bf16,
#               dropout off, at batch 8, 32 and 4: hpcbench eager, --cuda-graph and
#               --cuda-graph --fused beside Hugging Face eager, HF + torch.compile
#               (reduce-overhead at every batch; default at HPCBENCH_ENGINE_DEFAULT_COMPILE_BATCHES,
#               "32"; max-autotune with HPCBENCH_ENGINE_AUTOTUNE=1) and Lightning
#               on the same batches; graphed and fused losses against eager's; each batch's
#               results written as it finishes (HPCBENCH_ENGINE_BATCHES, default "8 32 4";
#               HPCBENCH_ENGINE_BUDGET_S: no batch started past it, no compile past it)
#   engine-protocol
#               the engine measured by the protocol of tools/gpu/protocol.py (issue 42): eager
#               and --cuda-graph --fused interleaved (eager first and last), at least 100 timed
#               steps each, compared with Welch's interval; losses against the envelope of the
#               eager repeats; the memory column against NVML's process peak. In the order of
#               the third GPU table (issue 43): batch 32 dropout 0 (three graphed runs between
#               four eager), batch 32 dropout 0.1, batch 4 and 8 (the eager runs' spread is the
#               noise floor), then HF + compile reduce-overhead at 4, 8, 32 while the budget
#               lasts (HPCBENCH_ENGINE_PROTOCOL_BUDGET_S); each part's results as it finishes
#   squad-eval  the shipped SQuAD sample with evaluation, eager against --cuda-graph --fused
#               (a short last batch; evaluation reading the masters after a capture): EM and F1
#               within SQUAD_EVAL_POINTS of each other, validation loss within the fused bound
#   baseline    bert-base, seq 384, bf16, batch 32 and 4: hpcbench beside Hugging Face
#               eager and Lightning on the same batches (lengths, masks), SDPA backends
#   precision   fp32, tf32, fp16, bf16 at batch 32, each beside Hugging Face eager
#   strategies  every strategy with --keep-collectives at world size 1 (NCCL for real;
#               pipeline and tensor included, which have no collective at one rank)
#               against the baseline: step overhead, losses; PyTorch's FSDP2 at world size 1
#               against HF eager on the same batches; bench-comm on NCCL at world size 1 and
#               a device-to-device copy for scale
#   shared-gpu  2 and 4 ranks sharing the GPU over Gloo (--backend gloo --allow-shared-gpu):
#               every strategy's losses against the baseline's at the same global batch,
#               and the evaluation gather on real SQuAD
#               (HPCBENCH_SHARED_STEPS steps each, default 8: fewer when device time is short);
#               first pipeline (gpipe, 1f1b; 2 stages) and tensor (tp 2) on 2 ranks, their
#               bubble beside (P-1)/(M+P-1); HPCBENCH_SHARED_SCOPE=model-parallel runs only those
#   profile     bert-base seq 384 bf16 batch 32, --cuda-graph --fused, dropout 0: the kernel table
#               of three replays (--profile 4-6; kernel_table.csv, the trace in
#               profile-trace.tar.gz); each lever's step off and on between two runs of the
#               default engine (HPCBENCH_QKV_GRAD=packed; --no-batch-prefetch; --no-residual-fold;
#               --no-fused-embedding; --no-fused-adamw; --tunableop, its choices read from run.json);
#               dropout 0.1 timed beside 0 (not in all: run it by name)
#   adamw       bench_kernels --adamw: the master-weight AdamW kernel (issue 41) against its ATen
#               composite element by element (bert-base's 201 parameters, a ragged layout, a
#               captured graph's replays), then, only if every check passed, its ms per step
#               beside PyTorch's fused AdamW on the same work (bf16 grads copied into fp32,
#               clip_grad_norm_ by _foreach ops, _fused_adamw_ per group, weights copied out;
#               itself checked against the composite first) (not in all: run it by name)
#   fp8         bench_kernels --fp8: the 12 GEMMs of a bert-base layer at M = 12,288, bf16
#               against _scaled_mm (per-tensor, row-wise), casts, SQNR, the 1.3x rule's verdict
#               (not in all: run it by name)
#   deterministic
#               --deterministic (issue 42), bf16, dropout 0, at the small batch (where eager drifted
#               from itself most): eager twice and --cuda-graph once, then --fused and --cuda-graph
#               --fused; each group's losses equal bit for bit at every step, the mode read back
#               from run.json, the graphed runs captured (tools/gpu/deterministic_check.py; not in
#               all: run it by name)
#
# Each phase writes <phase>.json (its figures and checks) and <phase>-runs.tar.gz (the
# run folders' summary.csv, run.json, loss.csv, utilisation.csv), and every call ends
# with summary.md over the phases present and validate.log: at most 8 files for 3
# phases. They go to $OUT (the device tool's folder) or results/gpu/<device>-<date>/.
# tools/gpu/run-second-table.sh is the one prepared call of engine, strategies, shared-gpu.
# tools/gpu/validate_report.py summary DIR... rebuilds summary.md from several calls.
#
# --dry: every phase on this CPU machine with tiny shapes (bert-tiny, seq 64, a few
# steps; the same commands with the device swapped), as the test suite runs it, so that
# the script cannot rot. The hpcbench binary is $HPCBENCH_BIN (default: the build
# phase's build-gpu/hpcbench, built first if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

known_phases="build engine engine-protocol squad-eval baseline precision strategies shared-gpu profile fp8 adamw strategies-graph deterministic all"
dry=0 plan=0
phases=()
for a in "$@"; do
  case "$a" in
    --dry) dry=1 ;;
    --plan) plan=1 ;;
    # The order of importance of the next GPU run (issue 32): the engine first, then the
    # strategies at world size 1, then ranks sharing the GPU; the first run's phases after.
    all) phases+=(build engine strategies shared-gpu baseline precision) ;;
    build | engine | baseline | precision | strategies | shared-gpu | engine-protocol | squad-eval | profile | fp8 | strategies-graph) phases+=("$a") ;;
    adamw) phases+=("$a") ;;
    deterministic) phases+=("$a") ;;
    *) echo "validate.sh: unknown phase or option '$a' (phases: $known_phases; --dry, --plan)" >&2
       exit 2 ;;
  esac
done
((${#phases[@]})) || { echo "usage: tools/gpu/validate.sh [--dry | --plan] PHASE... ($known_phases)" >&2; exit 2; }

# The Python that has torch: $HPCBENCH_PY, else python3, else the GPU image's venv. A --plan
# runs nothing and needs none.
PY=${HPCBENCH_PY:-}
((plan)) && PY=${PY:-python3}
if [[ -z $PY ]]; then
  for p in python3 /opt/torch/.venv/bin/python3; do
    if "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
  done
fi
[[ -n $PY ]] || { echo "validate.sh: no Python with torch found (set HPCBENCH_PY)" >&2; exit 1; }
((plan)) || torch_lib=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# A binary built elsewhere against the same torch finds this machine's LibTorch, and the CUDA
# runtime its fused kernels link (libcudart.so.13) from the wheels torch itself loads it from
# (site-packages/nvidia/*/lib): a toolkit's copy in another folder may be older, or absent.
((plan)) || wheel_libs=$("$PY" -c 'import glob, os, torch; sp = os.path.dirname(os.path.dirname(torch.__file__))
print(":".join(sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))))')
((plan)) || export LD_LIBRARY_PATH="$torch_lib${wheel_libs:+:$wheel_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1

if ((dry)); then
  device=cpu model=bert-tiny seq=64 stride=32 big=8 small=2 steps=6 warm=2 samples=64 sample_ms=50 shared_seq=32
  eval_seq=64 eval_stride=16 eval_batch=4
  # Two batches, so that the per-batch writing is exercised; torch.compile only at the first
  # (Inductor's C++ code generation takes about a minute a mode on 2 cores, the same code
  # path at every batch).
  engine_batches="4 2" engine_compile_batches=4 engine_default_compile_batches=4
  # The protocol's runs: 100 timed steps there; here enough to exercise the arithmetic.
  proto_big=4 proto_small="2" proto_steps=8 proto_warm=2 proto_min=6 proto_compile="" proto_pairs=2 proto_precision=fp32
  label=cpu-dry
  hb_limit=${HPCBENCH_RUN_TIMEOUT_S:-0} ref_limit=${HPCBENCH_REF_TIMEOUT_S:-0}  # the suite's own timeout holds
else
  device=cuda model=bert-base-uncased seq=384 stride=128 big=32 small=4 steps=40 warm=10 samples=2048 sample_ms=100
  shared_seq=128
  eval_seq=128 eval_stride=32 eval_batch=8
  # The users' batch first, then the MFU target's, then the most launch-bound one.
  engine_batches="8 32 4" engine_compile_batches=all
  # Compile at 32 and 4 first: the first table's reduce-overhead failed there; batch 8 was measured
  # by the second table's call 2, so it is the one the budget leaves out.
  proto_big=32 proto_small="4 8" proto_steps=110 proto_warm=10 proto_min=100 proto_compile="32 4 8" proto_pairs=3
  proto_precision=bf16
  # compile-default only where its target is (batch 32: "at least the best HF + compile mode");
  # batch 4 and 8 are held to reduce-overhead, and each compile costs ~a minute of device time.
  engine_default_compile_batches=${HPCBENCH_ENGINE_DEFAULT_COMPILE_BATCHES:-32}
  # A bert-base run of 40 steps takes ~15 s there; the references' call with two compiles, ~2 min.
  hb_limit=${HPCBENCH_RUN_TIMEOUT_S:-180} ref_limit=${HPCBENCH_REF_TIMEOUT_S:-360}
  ((plan)) || label=$("$PY" -c 'import torch; print(torch.cuda.get_device_name().replace(" ", "-"))' 2>/dev/null || echo gpu)
fi
work=${HPCBENCH_VALIDATE_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/hpcbench-validate.XXXXXX")}
mkdir -p "$work"
# A --plan writes nothing where results go: its listing and estimate stay in the work folder.
((plan)) && OUT=$work/plan-out
OUTDIR=${OUT:-results/gpu/$label-$(date +%Y%m%d)}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
log="$OUTDIR/validate.log"
BIN=${HPCBENCH_BIN:-$root/build-gpu/hpcbench}
report() { "$PY" "$root/tools/gpu/validate_report.py" "$@"; }
engine_batches=${HPCBENCH_ENGINE_BATCHES:-$engine_batches}
say() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
# Every command's output goes to the log and the terminal; a failing command fails
# its phase, which is recorded and the next phase still runs.
# A command given a limit (run_limit=SECONDS run ...) is stopped there: code that never ran on a
# GPU (a capture, a kernel) could hang, and a hang would spend the whole call's device time.
run() {
  if ((plan)); then
    # The command as the shell would run it; a dump it would write is left behind empty, so
    # that what reads it is listed too.
    { printf 'run'; printf ' %q' "$@"; printf '\n'; } >>"$work/plan.txt"
    local i
    for ((i = 1; i < $#; i++)); do [[ ${!i} == --dump-data ]] && { local j=$((i + 1)); : >"${!j}"; }; done
    return 0
  fi
  printf '$ %s\n' "$*" >>"$log"
  local t=()
  ((${run_limit:-0} > 0)) && t=(timeout -k 10 "$run_limit")
  "${t[@]}" "$@" 2>&1 | tee -a "$log"
}

hb_run() {  # name, then run flags
  local name=$1
  shift
  run_limit=$hb_limit run "$BIN" run --model "$model" --max-seq-length "$seq" --doc-stride "$stride" --device "$device" \
    --synthetic-samples "$samples" --max-steps "$steps" --timing-warmup-steps "$warm" --log-every 10 \
    --sample-ms "$sample_ms" --results-dir "$work/runs" --run-name "$name" "$@"
}
ref_run() {  # trainer, precision, batch, dump, json, then reference_train.py flags
  local trainer=$1 precision=$2 batch=$3 data=$4 json=$5
  shift 5
  run_limit=$ref_limit run "$PY" "$root/tools/gpu/reference_train.py" --trainer "$trainer" --model "$model" --precision "$precision" \
    --batch "$batch" --data "$data" --steps "$steps" --warmup "$warm" --device "$device" --json-out "$json" "$@"
}

phase_build() {  # [record]: where build.json goes (a build that another phase needed keeps it out of $OUT)
  local record=${1:-$OUTDIR/build.json}
  if ((dry)) && [[ -n ${HPCBENCH_BIN:-} ]]; then
    say "build: --dry uses the suite's binary $BIN"
  elif [[ -n ${HPCBENCH_BIN:-} ]] && "$BIN" --version >/dev/null 2>&1; then
    # A staged-headers binary built elsewhere against the same torch (carried, or
    # exported by an earlier call) saves the build's minutes of GPU time.
    say "build: the carried binary $BIN loads against $torch_lib; not building"
  else
    [[ -n ${HPCBENCH_BIN:-} ]] && say "build: the carried binary $BIN does not run here; building instead"
    BIN=$root/build-gpu/hpcbench
    local prefix deps=()
    prefix=$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
    [[ -d $root/.gpu-deps ]] && deps=(-DHPCBENCH_DEPS_DIR="$root/.gpu-deps")
    say "build: cmake against $prefix ${deps[*]}"
    run cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      "${deps[@]}" -DHPCBENCH_BUILD_TESTS=OFF -DHPCBENCH_BUILD_BENCH=ON -DHPCBENCH_USE_CCACHE=OFF \
      -DTORCH_CUDA_ARCH_LIST=9.0 >/dev/null
    local t0=$SECONDS targets=(hpcbench)
    # The engine phase's kernel check, where the tree has it.
    if cmake --build "$root/build-gpu" --target help 2>/dev/null | grep -q '^bench_kernels:'; then targets+=(bench_kernels); fi
    run cmake --build "$root/build-gpu" -j"$(nproc)" --target "${targets[@]}" >/dev/null
    echo "build seconds: $((SECONDS - t0))" | tee -a "$log"
    # The binary comes back with the results when asked (HPCBENCH_EXPORT_BIN=1), so that a
    # later call on a fresh machine carries it (HPCBENCH_BIN) instead of building again.
    if [[ ${HPCBENCH_EXPORT_BIN:-0} == 1 ]]; then
      strip -o "$work/hpcbench" "$BIN" && gzip -c "$work/hpcbench" >"$OUTDIR/hpcbench.gz"
    fi
  fi
  run "$BIN" --version
  run "$BIN" env
  report build "$work" "$record" --bin "$BIN"
}

ensure_bin() {
  # A carried binary that does not load here is rebuilt; the record stays with the work
  # files so that a call of three phases keeps to 8 files in $OUT.
  [[ -x $BIN ]] && "$BIN" --version >/dev/null 2>&1 || phase_build "$work/build.json"
}

# Seconds since the phase began against its budget (HPCBENCH_<PHASE>_BUDGET_S; 0 or unset:
# none). What a phase leaves out for time is named in $work/skipped-<phase>.txt and its JSON.
within_budget() {  # phase, what would run
  local var=HPCBENCH_${1^^}_BUDGET_S
  var=${var//-/_}
  local budget=${!var:-0}
  # A plan leaves the check to its estimate, which knows what the phase will have spent.
  ((plan)) && { echo "budget $1 $budget $2" >>"$work/plan.txt"; return 0; }
  if ((budget > 0 && SECONDS - phase_t0 >= budget)); then
    say "$1: $2 not run: the phase's budget of $budget s is spent ($((SECONDS - phase_t0)) s)"
    echo "$2" >>"$work/skipped-$1.txt"
    return 1
  fi
}

# The run folders (and the references' JSONs under runs/ref) so far, into <phase>-runs.tar.gz:
# a call cut short keeps what finished.
# HPCBENCH_ONE_ARCHIVE=1: every phase's folders in one runs.tar.gz (under <phase>/), rewritten
# after each, so that a call of more phases keeps to 8 files.
snapshot_runs() {  # phase
  [[ -d $work/runs ]] || return 0
  if [[ ${HPCBENCH_ONE_ARCHIVE:-0} == 1 ]]; then
    mkdir -p "$work/archive/$1"
    (cd "$work/runs" && find . \( -name summary.csv -o -name run.json -o -name loss.csv -o -name utilisation.csv \
      -o -path './ref/*.json' \) -exec cp --parents {} "$work/archive/$1" \;) || true
    (cd "$work/archive" && tar -czf "$OUTDIR/runs.tar.gz" .) || true
    return 0
  fi
  (cd "$work/runs" && find . -name summary.csv -o -name run.json -o -name loss.csv -o -name utilisation.csv \
    -o -path './ref/*.json' | tar -czf "$OUTDIR/$1-runs.tar.gz" -T -) || true
}

bench_kernels_bin() {
  local c d
  d=$(dirname "$BIN")
  for c in "${HPCBENCH_BENCH_KERNELS:-}" "$d/bench_kernels" "$d/bench/bench_kernels" "$root/build-gpu/bench/bench_kernels" \
    "$root/build/bench/bench_kernels" "$root/build/bench_kernels"; do
    [[ -n $c && -x $c ]] && { echo "$c"; return 0; }
  done
  return 1
}

# The numerics of every custom kernel against its ATen composite (on a CPU: the composites
# against the unfused modules), before any timing: a wrong kernel's speed is no figure. Every
# phase that times the fused engine runs it first; $work/kernels.json records it.
kernel_check() {
  local phase=$1 kb rc=0 t0=$SECONDS
  if kb=$(bench_kernels_bin); then
    say "$phase: kernel numerics ($kb --check-only)"
    # run's copy goes to the log; the terminal gets the end.
    run "$kb" --check-only >"$work/kernels.out" 2>&1 || rc=$?
    tail -n 30 "$work/kernels.out"
    "$PY" -c 'import json, sys; json.dump({"status": "passed" if sys.argv[2] == "0" else "failed", "exe": sys.argv[1],
"rc": int(sys.argv[2]), "seconds": int(sys.argv[3]), "output_tail": open(sys.argv[4]).read()[-4000:]}, open(sys.argv[5], "w"))' \
      "$kb" "$rc" "$((SECONDS - t0))" "$work/kernels.out" "$work/kernels.json"
  else
    say "$phase: kernel numerics: bench_kernels not built (looked beside $BIN, in build-gpu/ and build/; HPCBENCH_BENCH_KERNELS names it)"
    echo '{"status": "not built"}' >"$work/kernels.json"
  fi
  return "$rc"
}

phase_engine() {
  ensure_bin
  "$BIN" --version >"$work/engine-version.txt" 2>&1 || true
  local rc=0
  kernel_check engine || rc=$?
  if ((rc != 0)); then
    say "engine: the kernel check failed: no timed runs"
    report engine "$work" "$OUTDIR/engine.json" --batches "" $( ((dry)) && echo --dry)
    return 1
  fi
  # 2. Timed runs, batch by batch. Dropout off everywhere: graphed losses must then equal
  # eager's, and every side does the same work.
  local b done_batches=() trainers
  for b in $engine_batches; do
    within_budget engine "batch $b" || continue
    local common=(--precision bf16 --batch-size "$b" --dropout 0)
    say "engine: batch $b: hpcbench eager, --cuda-graph, --cuda-graph --fused"
    hb_run "engine-b$b-eager" "${common[@]}" --dump-data "$work/data-engine-b$b.safetensors"
    hb_run "engine-b$b-graph" "${common[@]}" --cuda-graph
    hb_run "engine-b$b-graph-fused" "${common[@]}" --cuda-graph --fused
    # Eager against itself at every batch: how far apart two identical runs' losses drift
    # (attention's backward sums with atomics), the floor the graphed and fused runs' losses
    # are read against (validate_report.py: ENGINE_DRIFT_FACTOR).
    hb_run "engine-b$b-eager-repeat" "${common[@]}"
    trainers=eager
    if [[ $engine_compile_batches == all || " $engine_compile_batches " == *" $b "* ]] &&
      within_budget engine "batch $b: torch.compile"; then
      trainers+=,compile-reduce-overhead
      [[ " $engine_default_compile_batches " == *" $b "* ]] && trainers+=,compile-default
      [[ ${HPCBENCH_ENGINE_AUTOTUNE:-0} == 1 ]] && trainers+=,compile-max-autotune
    fi
    # HPCBENCH_ENGINE_LIGHTNING=0 leaves Lightning out (a second call that measured it already).
    [[ ${HPCBENCH_ENGINE_LIGHTNING:-1} == 0 ]] || trainers+=,lightning
    say "engine: batch $b: Hugging Face ($trainers), the same batches"
    mkdir -p "$work/runs/ref"
    ref_run "$trainers" bf16 "$b" "$work/data-engine-b$b.safetensors" "$work/runs/ref/engine-b$b-{trainer}.json" \
      --dropout 0
    done_batches+=("$b")
    report engine "$work" "$OUTDIR/engine.json" --batches "$(IFS=,; echo "${done_batches[*]}")" $( ((dry)) && echo --dry) ||
      true
    snapshot_runs engine
  done
  report engine "$work" "$OUTDIR/engine.json" --batches "$(IFS=,; echo "${done_batches[*]}")" $( ((dry)) && echo --dry)
}

# One interleaved set (tools/gpu/protocol.py): eager, graph + fused, eager, ... eager, named
# <prefix>-<i>-<side> in the order they ran, so that validate_report.py reads the order back.
protocol_set() {  # prefix, pairs (graphed runs), then run flags
  local prefix=$1 pairs=$2 i=0 k
  shift 2
  local flags=(--max-steps "$proto_steps" --timing-warmup-steps "$proto_warm" "$@")
  for ((k = 0; k < pairs; k++)); do
    hb_run "$prefix-$i-eager" "${flags[@]}" $( ((k == 0)) && echo --dump-data "$work/data-$prefix.safetensors")
    i=$((i + 1))
    hb_run "$prefix-$i-graph-fused" "${flags[@]}" --cuda-graph --fused
    i=$((i + 1))
  done
  hb_run "$prefix-$i-eager" "${flags[@]}"
}

phase_engine_protocol() {
  ensure_bin
  local parts=() b
  if ! kernel_check engine-protocol; then
    say "engine-protocol: the kernel check failed: no timed runs"
    return 1
  fi
  proto_report() {
    report engine-protocol "$work" "$OUTDIR/engine-protocol.json" --parts "$(IFS=,; echo "${parts[*]}")" \
      --min-steps "$proto_min" $( ((dry)) && echo --dry) || true
    snapshot_runs engine-protocol
  }
  # 1. Batch 32, dropout 0: three graphed runs between four eager ones.
  say "engine-protocol: batch $proto_big, dropout 0: eager and --cuda-graph --fused interleaved (3 graphed runs)"
  protocol_set "proto-b$proto_big-d0" "$proto_pairs" --precision "$proto_precision" --batch-size "$proto_big" --dropout 0
  parts+=("proto-b$proto_big-d0:$proto_big")
  proto_report
  # 2. Batch 32, dropout 0.1 (every earlier GPU figure had dropout off).
  if within_budget engine-protocol "batch $proto_big dropout 0.1"; then
    say "engine-protocol: batch $proto_big, dropout 0.1"
    protocol_set "proto-b$proto_big-d01" 2 --precision "$proto_precision" --batch-size "$proto_big" --dropout 0.1
    parts+=("proto-b$proto_big-d01:$proto_big")
    proto_report
  fi
  # 3. The launch-bound batches; the eager runs' spread is the noise floor they are read against.
  for b in $proto_small; do
    within_budget engine-protocol "batch $b" || continue
    say "engine-protocol: batch $b, dropout 0"
    protocol_set "proto-b$b-d0" 2 --precision "$proto_precision" --batch-size "$b" --dropout 0
    parts+=("proto-b$b-d0:$b")
    proto_report
  done
  # Then HF + compile reduce-overhead on the same batches, while the budget lasts.
  for b in $proto_compile; do
    [[ -f $work/data-proto-b$b-d0.safetensors ]] || continue
    within_budget engine-protocol "batch $b: HF + compile reduce-overhead" || continue
    mkdir -p "$work/runs/ref"
    ref_run compile-reduce-overhead bf16 "$b" "$work/data-proto-b$b-d0.safetensors" \
      "$work/runs/ref/proto-b$b-{trainer}.json" --dropout 0 || true
    proto_report
  done
  report engine-protocol "$work" "$OUTDIR/engine-protocol.json" --parts "$(IFS=,; echo "${parts[*]}")" \
    --min-steps "$proto_min" $( ((dry)) && echo --dry)
}

phase_squad_eval() {
  ensure_bin
  local sq=$root/tests/fixtures/squad/dev-v1.1-sample.json vocab=$root/tests/fixtures/bert-base-uncased/vocab.txt
  # No pretrained weights there (no network): the architecture's config, randomly initialised.
  # What is checked is that the graphed, fused engine evaluates as eager does.
  local eval_model=$root/tests/fixtures/bert-base-uncased/config.json side
  if ((dry)); then
    eval_model=$work/bert-tiny-config.json
    "$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(hidden_size=128, num_hidden_layers=2,
num_attention_heads=2, intermediate_size=512); json.dump(c, open(sys.argv[2], "w"))' \
      "$root/tests/fixtures/bert-base-uncased/config.json" "$eval_model"
  fi
  if ((dry)); then
    # The first article's questions only: evaluating all 6143 windows takes minutes on 2 cores.
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["data"] = d["data"][:1]
d["data"][0]["paragraphs"] = d["data"][0]["paragraphs"][:3]; json.dump(d, open(sys.argv[2], "w"))' "$sq" "$work/squad-dry.json"
    sq=$work/squad-dry.json
  fi
  for side in eager graph-fused; do
    local extra=()
    [[ $side == graph-fused ]] && extra=(--cuda-graph --fused)
    say "squad-eval: $side on the shipped SQuAD sample, with evaluation"
    run_limit=$hb_limit run "$BIN" run --model "$eval_model" --train-data "$sq" --eval-data "$sq" --vocab "$vocab" \
      --max-seq-length "$eval_seq" --doc-stride "$eval_stride" --device "$device" --precision "$proto_precision" --dropout 0 \
      --batch-size "$eval_batch" --max-steps 6 --timing-warmup-steps 1 --eval-batch-size "$eval_batch" --cache-dir none \
      --results-dir "$work/runs" --run-name "squad-eval-$side" "${extra[@]}"
  done
  report squad-eval "$work" "$OUTDIR/squad-eval.json"
}

phase_baseline() {
  ensure_bin
  local b
  for b in "$big" "$small"; do
    say "baseline: hpcbench bf16 batch $b"
    hb_run "baseline-bf16-b$b" --precision bf16 --batch-size "$b" --dump-data "$work/data-b$b.safetensors"
    say "baseline: Hugging Face eager and Lightning, bf16 batch $b, the same batches"
    ref_run eager bf16 "$b" "$work/data-b$b.safetensors" "$work/ref-eager-bf16-b$b.json"
    ref_run lightning bf16 "$b" "$work/data-b$b.safetensors" "$work/ref-lightning-bf16-b$b.json"
  done
  report baseline "$work" "$OUTDIR/baseline.json" --batches "$big,$small"
}

phase_precision() {
  ensure_bin
  local p
  for p in fp32 tf32 fp16 bf16; do
    say "precision: hpcbench $p batch $big"
    hb_run "precision-$p-b$big" --precision "$p" --batch-size "$big" --dump-data "$work/data-$p.safetensors"
    ref_run eager "$p" "$big" "$work/data-$p.safetensors" "$work/ref-eager-$p-b$big.json"
  done
  report precision "$work" "$OUTDIR/precision.json" --batch "$big"
}

phase_strategies() {
  ensure_bin
  # Dropout off: the losses of every strategy must then follow the baseline's.
  local common=(--precision bf16 --batch-size "$big" --dropout 0)
  say "strategies: baseline"
  hb_run strat-baseline "${common[@]}" --dump-data "$work/data-strat.safetensors"
  # The baseline against itself: attention's backward sums with atomics, so two identical runs
  # drift apart; ddp's and tensor's losses are read against that drift (validate_report.py).
  hb_run strat-baseline-repeat "${common[@]}"
  # PyTorch's own overhead at world size 1, the reference for the sharded rows: FSDP2 against
  # Hugging Face eager on the same batches, dropout off as here, configured as zero 3 and fsdp
  # full run below (the same units, resharding, compute copies, reduce dtype and autocast), so
  # that its overhead and theirs are the same work's (validate_report.py checks the record).
  local reduce=bf16
  say "strategies: Hugging Face eager and FSDP2 (fully_shard, world size 1), the same batches; FSDP2 as zero 3 /"
  say "  fsdp full: units the embeddings, each encoder layer, the QA head, each resharded after forward;"
  say "  bf16 compute copies of fp32 shards, gradients reduced in $reduce, forward under bf16 autocast"
  ref_run eager bf16 "$big" "$work/data-strat.safetensors" "$work/ref-strat-eager.json" --dropout 0
  ref_run fsdp2 bf16 "$big" "$work/data-strat.safetensors" "$work/ref-strat-fsdp2.json" --dropout 0 \
    --reduce-dtype "$reduce"
  say "strategies: each with --keep-collectives at world size 1"
  hb_run strat-ddp "${common[@]}" --strategy ddp --keep-collectives
  local z
  for z in 1 2; do hb_run "strat-zero$z" "${common[@]}" --strategy zero --zero-stage "$z" --keep-collectives; done
  hb_run strat-zero3 "${common[@]}" --strategy zero --zero-stage 3 --reduce-dtype "$reduce" --keep-collectives
  hb_run strat-fsdp-full "${common[@]}" --strategy fsdp --sharding full --reduce-dtype "$reduce" --keep-collectives
  hb_run strat-fsdp-grad-op "${common[@]}" --strategy fsdp --sharding grad-op --keep-collectives
  # One stage of 4 micro-batches, one tensor-parallel rank: at world size 1 their groups hold
  # one rank and run no collective (--keep-collectives keeps what there is: nothing); their
  # step over the baseline's is the micro-batching's and the split layers' own cost.
  hb_run strat-pipeline "${common[@]}" --strategy pipeline --keep-collectives
  hb_run strat-tensor "${common[@]}" --strategy tensor --keep-collectives
  say "strategies: bench-comm at world size 1"
  local max=1G
  ((dry)) && max=1M
  run "$BIN" bench-comm --device "$device" --op all --min-bytes 1M --max-bytes "$max" --factor 4 --iters 10 \
    --warmup-iters 3 --output "$work/bench-comm.txt"
  run "$PY" "$root/tools/gpu/validate_report.py" copy-bandwidth --device "$device" --json-out "$work/copy.json"
  report strategies "$work" "$OUTDIR/strategies.json"
}

# Every strategy graphed and fused (--cuda-graph --fused: each declares both, lib/strategies/*/spec.cpp
# and shard/plan.h, the pipeline at one stage) at world size 1 on NCCL with --keep-collectives,
# bf16, dropout off, at the big batch, interleaved with the graphed, fused baseline in three rounds
# (B, S..., B, S..., B, S..., B: each strategy three times, the baseline four), so that a spread over
# three repeats is measured rather than a difference of two. Each strategy (the baseline too) also runs
# twice fused without the capture on the same batches: its loss envelope is the same engine's, the
# fused kernels and bf16-resident weights rounding as its graph does. tools/gpu/strategies_graph.py
# holds the bounds (issue 40), the memory column against NVML's process peak included.
phase_strategies_graph() {
  ensure_bin
  local common=(--precision bf16 --batch-size "$big" --dropout 0 --fused)
  # HPCBENCH_SG_STRATEGIES: a subset, so that the phase can be split over two calls (46 runs
  # do not fit one call beside the engine protocol: tools/gpu/estimate.py).
  # shellcheck disable=SC2206 # a list of words
  local names=(${HPCBENCH_SG_STRATEGIES:-ddp zero1 zero2 zero3 fsdp-full fsdp-grad-op tensor pipeline}) repeats=3 i n
  declare -A flags=([ddp]="--strategy ddp" [zero1]="--strategy zero --zero-stage 1"
    [zero2]="--strategy zero --zero-stage 2" [zero3]="--strategy zero --zero-stage 3"
    [fsdp-full]="--strategy fsdp --sharding full" [fsdp-grad-op]="--strategy fsdp --sharding grad-op"
    [tensor]="--strategy tensor" [pipeline]="--strategy pipeline --micro-batches 4")
  for n in "${names[@]}"; do
    [[ -n ${flags[$n]:-} ]] || { say "strategies-graph: HPCBENCH_SG_STRATEGIES: unknown strategy '$n' (${!flags[*]})"; return 1; }
  done
  say "strategies-graph: each strategy's two fused eager runs (its loss envelope)"
  hb_run sg-eager-0 "${common[@]}" --dump-data "$work/data-sg.safetensors"
  hb_run sg-eager-1 "${common[@]}"
  for n in "${names[@]}"; do
    for i in 0 1; do
      # shellcheck disable=SC2086 # the strategy's flags are words
      hb_run "sg-$n-eager-$i" "${common[@]}" ${flags[$n]} --keep-collectives
    done
  done
  for ((i = 0; i <= repeats; i++)); do
    say "strategies-graph: round $i"
    hb_run "sg-baseline-$i" "${common[@]}" --cuda-graph
    ((i == repeats)) && break
    for n in "${names[@]}"; do
      # shellcheck disable=SC2086 # the strategy's flags are words
      hb_run "sg-$n-$i" "${common[@]}" ${flags[$n]} --keep-collectives --cuda-graph
    done
  done
  run "$PY" "$root/tools/gpu/strategies_graph.py" "$work" "$OUTDIR/strategies-graph.json" \
    --strategies "$(IFS=,; echo "${names[*]}")" --repeats "$repeats" $( ((dry)) && echo --dry)
}

phase_shared_gpu() {
  ensure_bin
  # fp32, dropout off, the same global batch: the ranks' losses must be the baseline's.
  local per=$small s=${HPCBENCH_SHARED_STEPS:-8} w
  ((dry)) && s=3
  # Shorter sequences than the other phases (the ranks' Gloo sums go through host memory),
  # with a stride to match: --dry shortens both the same way, so that it passes the same
  # combination of flags (the first GPU run found a stride left at the longer length's).
  local shared=(--precision fp32 --dropout 0 --max-steps "$s" --timing-warmup-steps 1 --max-seq-length "$shared_seq"
    --doc-stride $((shared_seq / 2)))
  local gloo=(--backend gloo --allow-shared-gpu --collective-timeout 600)
  # Model parallelism first (never run on a GPU before): 2 stages or 2 tensor ranks, one
  # replica, so each trains the whole global batch of the 2-rank baseline.
  local scope=${HPCBENCH_SHARED_SCOPE:-all}
  say "shared-gpu: pipeline (gpipe, 1f1b; 2 stages, 4 micro-batches) and tensor (tp 2) on 2 ranks, batch $((2 * per))"
  hb_run shared-w2-baseline "${shared[@]}" --batch-size $((2 * per))
  local sched
  for sched in gpipe 1f1b; do
    hb_run "shared-w2-pipeline-$sched" "${shared[@]}" --batch-size $((2 * per)) --strategy pipeline --stages 2 \
      --micro-batches 4 --schedule "$sched" --nproc-per-node 2 "${gloo[@]}"
  done
  hb_run shared-w2-tensor "${shared[@]}" --batch-size $((2 * per)) --strategy tensor --tp-size 2 --nproc-per-node 2 \
    "${gloo[@]}"
  snapshot_runs shared-gpu
  if [[ $scope == model-parallel ]]; then
    report shared-gpu "$work" "$OUTDIR/shared-gpu.json" --scope model-parallel
    return
  fi
  for w in 2 4; do
    say "shared-gpu: $w ranks, per-rank batch $per"
    ((w == 2)) || hb_run "shared-w$w-baseline" "${shared[@]}" --batch-size $((w * per))
    hb_run "shared-w$w-ddp" "${shared[@]}" --batch-size "$per" --strategy ddp --nproc-per-node "$w" "${gloo[@]}"
    local z
    for z in 1 2 3; do
      hb_run "shared-w$w-zero$z" "${shared[@]}" --batch-size "$per" --strategy zero --zero-stage "$z" \
        --nproc-per-node "$w" "${gloo[@]}"
    done
    hb_run "shared-w$w-fsdp-full" "${shared[@]}" --batch-size "$per" --strategy fsdp --sharding full \
      --nproc-per-node "$w" "${gloo[@]}"
    hb_run "shared-w$w-fsdp-grad-op" "${shared[@]}" --batch-size "$per" --strategy fsdp --sharding grad-op \
      --nproc-per-node "$w" "${gloo[@]}"
  done
  say "shared-gpu: hybrid sharding, groups of 2 of 4 ranks"
  hb_run shared-w4-fsdp-hybrid "${shared[@]}" --batch-size "$per" --strategy fsdp --sharding hybrid \
    --shard-group-size 2 --nproc-per-node 4 "${gloo[@]}"
  say "shared-gpu: the evaluation gather over 2 ranks on real SQuAD (the shipped sample)"
  local sq=$root/tests/fixtures/squad/dev-v1.1-sample.json vocab=$root/tests/fixtures/bert-base-uncased/vocab.txt
  # Real SQuAD by a hub name asks for the pretrained weights (none there: no network); a
  # config.json of the architecture, randomly initialised, is all the gather check needs:
  # the shipped bert-base one, or under --dry a bert-tiny one written here, so that --dry
  # takes the same path (a config file, a vocabulary, real data, no checkpoint).
  local eval_model=$root/tests/fixtures/bert-base-uncased/config.json
  if ((dry)); then
    eval_model=$work/bert-tiny-config.json
    "$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(hidden_size=128, num_hidden_layers=2,
num_attention_heads=2, intermediate_size=512); json.dump(c, open(sys.argv[2], "w"))' \
      "$root/tests/fixtures/bert-base-uncased/config.json" "$eval_model"
  fi
  run "$BIN" run --model "$eval_model" --train-data "$sq" --eval-data "$sq" --vocab "$vocab" --max-seq-length "$eval_seq" \
    --doc-stride "$eval_stride" --device "$device" --precision fp32 --dropout 0 --batch-size "$eval_batch" --max-steps 2 \
    --timing-warmup-steps 1 --eval-batch-size "$eval_batch" --cache-dir none --results-dir "$work/runs" \
    --run-name shared-eval-baseline
  run "$BIN" run --model "$eval_model" --train-data "$sq" --eval-data "$sq" --vocab "$vocab" --max-seq-length "$eval_seq" \
    --doc-stride "$eval_stride" --device "$device" --precision fp32 --dropout 0 --batch-size $((eval_batch / 2)) --max-steps 2 \
    --timing-warmup-steps 1 --eval-batch-size "$eval_batch" --cache-dir none --results-dir "$work/runs" \
    --run-name shared-eval-ddp --strategy ddp --nproc-per-node 2 "${gloo[@]}"
  report shared-gpu "$work" "$OUTDIR/shared-gpu.json"
}

# The graphed, fused step at the MFU target's batch: its kernel table over three replays
# (the capture is step 3), then each lever on unprofiled runs, and dropout 0.1 beside 0.
# The default engine's run comes first and last: every lever's other side runs between the two,
# whose drift is the floor its gain is read against (one run a lever: the 480 s of the third
# table's first call hold no more, tools/gpu/estimate.py).
phase_profile() {
  ensure_bin
  local common=(--precision bf16 --batch-size "$big" --cuda-graph --fused)
  say "profile: the kernel table of steps 4-6 (replays), batch $big, --cuda-graph --fused, dropout 0"
  hb_run profile-graph-fused "${common[@]}" --dropout 0 --profile 4-6
  (cd "$work/runs/profile-graph-fused" && tar -czf "$OUTDIR/profile-trace.tar.gz" profile-rank0.pt.trace.json \
    kernel_table.txt) || true
  say "profile: levers, each between the default engine's two runs"
  hb_run lever-base "${common[@]}" --dropout 0
  # Off by default: the run with it.
  HPCBENCH_QKV_GRAD=packed hb_run lever-qkv-packed "${common[@]}" --dropout 0
  # On by default: the runs without them.
  hb_run lever-no-prefetch "${common[@]}" --dropout 0 --no-batch-prefetch
  hb_run lever-no-residual-fold "${common[@]}" --dropout 0 --no-residual-fold
  hb_run lever-no-fused-embedding "${common[@]}" --dropout 0 --no-fused-embedding
  hb_run lever-no-fused-adamw "${common[@]}" --dropout 0 --no-fused-adamw
  # TunableOp, tuned in step 1 (eager, before the capture at step 3); its record (what it
  # tuned, what each GEMM chose) from run.json.
  hb_run lever-tunableop "${common[@]}" --dropout 0 --tunableop
  hb_run lever-base-repeat "${common[@]}" --dropout 0
  say "profile: dropout 0.1 beside 0 (lever-base)"
  hb_run dropout-0.1 "${common[@]}" --dropout 0.1
  run "$PY" "$root/tools/gpu/levers_report.py" profile "$work" "$OUTDIR/profile.json" $( ((dry)) && echo --dry)
}

phase_fp8() {
  ensure_bin
  local kb
  kb=$(bench_kernels_bin) || { say "fp8: bench_kernels not built"; return 1; }
  say "fp8: $kb --fp8$( ((dry)) && echo ' --dry')"
  local rc=0
  run_limit=$hb_limit run "$kb" --fp8 $( ((dry)) && echo --dry) >"$work/fp8.out" 2>&1 || rc=$?
  cat "$work/fp8.out"
  run "$PY" "$root/tools/gpu/levers_report.py" fp8 "$work/fp8.out" "$OUTDIR/fp8.json" && ((rc == 0))
}

# The master-weight AdamW kernel: its element-wise check, then (all checks passed) its
# timing beside PyTorch's fused AdamW on the same work (the kernel on a GPU; on a CPU the
# composite, which is what runs there). adamw.json (tools/gpu/adamw_report.py): every checked
# tensor's worst element error, each side's ms per repeat and the ratio, checks from the rows.
phase_adamw() {
  local kb rc=0
  kb=$(bench_kernels_bin) || { say "adamw: bench_kernels not built"; return 1; }
  say "adamw: $kb --adamw"
  run_limit=$hb_limit run "$kb" --adamw >"$work/adamw.out" 2>&1 || rc=$?
  cat "$work/adamw.out"
  # Not through run: under --plan nothing ran, and the empty output still gives an adamw.json
  # that says so (its checks fail; the plan does not).
  "$PY" "$root/tools/gpu/validate_report.py" adamw "$work/adamw.out" "$rc" "$OUTDIR/adamw.json" || ((plan)) || rc=1
  ((rc == 0))
}

# --deterministic: the same kernels give the same bits, so the captured step is held to
# eager exactly rather than to a noise envelope; the fused model (other kernels) to itself.
phase_deterministic() {
  ensure_bin
  local common=(--precision bf16 --batch-size "$small" --dropout 0 --deterministic)
  say "deterministic: batch $small, --deterministic: eager twice, --cuda-graph; --fused, --cuda-graph --fused"
  hb_run det-eager-0 "${common[@]}"
  hb_run det-eager-1 "${common[@]}"
  hb_run det-graph "${common[@]}" --cuda-graph
  hb_run det-fused "${common[@]}" --fused
  hb_run det-graph-fused "${common[@]}" --cuda-graph --fused
  run "$PY" "$root/tools/gpu/deterministic_check.py" "$work/runs" "$OUTDIR/deterministic.json" \
    --group eager=det-eager-0,det-eager-1,det-graph --group fused=det-fused,det-graph-fused $( ((dry)) && echo --dry)
}

if ((plan)); then
  # Every phase's commands listed, nothing run, then each phase's estimated seconds from the
  # recorded H100 runs (tools/gpu/estimate.py; HPCBENCH_PLAN_LIMIT_S: exit 1 past it).
  ensure_bin() { :; }
  report() { :; }
  bench_kernels_bin() { echo "$(dirname "$BIN")/bench_kernels"; }
  phase_build() { run "$BIN" --version; }  # a carried binary: what the call does with it
  : >"$work/plan.txt"
  for ph in "${phases[@]}"; do
    echo "phase $ph" >>"$work/plan.txt"
    "phase_${ph//-/_}" >/dev/null 2>"$work/plan-$ph.err" ||
      { cat "$work/plan-$ph.err" >&2; echo "validate.sh --plan: phase $ph could not be listed" >&2; exit 1; }
  done
  refs=()
  for d in "$root"/results/reference/gpu/*/; do refs+=(--reference "$d"); done
  exec "$PY" "$root/tools/gpu/estimate.py" "$work/plan.txt" "${refs[@]}" --limit-s "${HPCBENCH_PLAN_LIMIT_S:-0}" \
    ${HPCBENCH_PLAN_JSON:+--json "$HPCBENCH_PLAN_JSON"} $( [[ ${HPCBENCH_PLAN_COMMANDS:-0} == 1 ]] && echo --commands)
fi

status=0
for ph in "${phases[@]}"; do
  t0=$SECONDS phase_t0=$SECONDS
  rm -f "$OUTDIR/$ph.json" "$work/skipped-$ph.txt"
  if "phase_${ph//-/_}"; then ok=1; else ok=0 status=1; fi
  # The phase's figures stay when a check or a later command failed; a phase that
  # left none is recorded as failed all the same.
  "$PY" -c '
import json, os, sys
path, phase, ok, secs = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
j = json.load(open(path)) if os.path.exists(path) else {"phase": phase}
j["failed"] = not ok
j["seconds"] = secs
json.dump(j, open(path, "w"), indent=1)' "$OUTDIR/$ph.json" "$ph" "$ok" "$((SECONDS - t0))"
  if ((ok)); then say "phase $ph done in $((SECONDS - t0)) s"; else say "phase $ph FAILED (see the log above)"; fi
  if [[ $ph != build && -d $work/runs ]]; then
    snapshot_runs "$ph"
    rm -rf "$work/runs"
  fi
done
report summary "$OUTDIR" --out "$OUTDIR/summary.md" || status=1
echo "validate.sh: results in $OUTDIR"
exit $status
