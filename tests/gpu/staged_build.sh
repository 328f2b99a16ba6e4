#!/usr/bin/env bash
# The staged-headers build of tools/gpu/validate.sh's build phase, here: stage the
# headers, configure with -DHPCBENCH_DEPS_DIR, build the binary, run it. Without the
# TensorBoard writer, as there: the GPU machines have no protobuf library.
#   staged_build.sh SOURCE_DIR WORK_DIR PYTHON
set -euo pipefail
src=$1 work=$2 py=$3
mkdir -p "$work"
"$src/tools/gpu/stage-deps.sh" "$work/deps" >/dev/null
prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
if [[ ! -f $work/build/build.ninja ]]; then
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DHPCBENCH_DEPS_DIR="$work/deps" -DHPCBENCH_BUILD_TESTS=OFF -DHPCBENCH_BUILD_BENCH=OFF \
    -DHPCBENCH_WITH_TENSORBOARD=OFF >"$work/configure.log" 2>&1 ||
    { tail -40 "$work/configure.log"; exit 1; }
fi
export CCACHE_BASEDIR=$src CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
cmake --build "$work/build" --target hpcbench -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -60 "$work/build.log"; exit 1; }
"$work/build/hpcbench" --version
# Staged headers only: fmt and spdlog header-only, nothing from /usr/include's -dev packages.
grep -q "HPCBENCH_DEPS_DIR:PATH=$work/deps" "$work/build/CMakeCache.txt"
echo "staged-headers build OK"
