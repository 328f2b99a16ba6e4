#!/usr/bin/env bash
# On the GPU machine (torch 2.11, transformers, CMake, nvcc, ninja; no
# network, no Debian -dev packages): builds hpcbench against the
# preinstalled torch with the dependency folder staged here
# (tools/gpu/stage-deps.sh, carried as .gpu-deps), then runs the baseline on
# bert-base, seq 384, bf16 beside Hugging Face eager on the same GPU.
# Output goes to $OUT (the device tool's folder) or results/gpu.
#
#   here:  tools/gpu/stage-deps.sh .gpu-deps
#   there: tools/gpu/baseline-gpu.sh          (device run with carry .gpu-deps)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUTDIR=${OUT:-results/gpu}
mkdir -p "$OUTDIR"
prefix=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DHPCBENCH_DEPS_DIR="$PWD/.gpu-deps" -DHPCBENCH_BUILD_TESTS=OFF -DHPCBENCH_BUILD_BENCH=OFF \
  -DHPCBENCH_USE_CCACHE=OFF -DTORCH_CUDA_ARCH_LIST=9.0 >"$OUTDIR/configure.log" 2>&1 ||
  { tail -40 "$OUTDIR/configure.log"; exit 1; }
cmake --build build-gpu -j"$(nproc)" --target hpcbench >"$OUTDIR/build.log" 2>&1 || { tail -40 "$OUTDIR/build.log"; exit 1; }
build-gpu/hpcbench --version | tee "$OUTDIR/baseline-gpu.txt"
build-gpu/hpcbench env | tee -a "$OUTDIR/baseline-gpu.txt"
STEPS=${STEPS:-60}
build-gpu/hpcbench run --model bert-base-uncased --max-seq-length 384 --doc-stride 128 --batch-size 32 \
  --precision bf16 --synthetic-samples 8192 --max-steps "$STEPS" --timing-warmup-steps 10 --log-every 10 \
  --results-dir "$OUTDIR/runs" --run-name baseline-bert-base-bf16 2>&1 | tee -a "$OUTDIR/baseline-gpu.txt"
$PY tools/gpu/hf_eager_step.py --model bert-base-uncased --seq 384 --batch 32 --precision bf16 \
  --steps "$STEPS" --warmup 10 --hpcbench-run "$OUTDIR/runs/baseline-bert-base-bf16" \
  --json-out "$OUTDIR/baseline-gpu.json" 2>&1 | tee -a "$OUTDIR/baseline-gpu.txt"
