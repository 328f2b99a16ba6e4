#!/usr/bin/env bash
# The staged-headers build of tools/gpu/validate.sh's build phase, here: stage the
# headers, configure with -DHPCBENCH_DEPS_DIR, build the binary, run it. Without the
# TensorBoard writer, as there: the GPU machines have no protobuf library.
#   staged_build.sh SOURCE_DIR BUILD_DIR PYTHON [CXX CC]
# CXX and CC: the main build's compilers (tools/setup.sh picks Clang where it can;
# the GPU machines build with their GCC), so that ccache has the compiles.
# BUILD_DIR sits beside the main build folder (CMake passes <build>-staged): at the
# same depth under SOURCE_DIR, every compile's paths relative to its build folder
# (CCACHE_BASEDIR) are the main build's, and so is its preprocessed text (the
# dependencies' headers are reached through build/deps-shadow in both), so ccache
# serves the compiles the main build made; the hit rate is printed at the end.
set -euo pipefail
src=$1 work=$2 py=$3 cxx=${4:-} cc=${5:-}
compilers=()
[[ -n $cxx ]] && compilers+=(-DCMAKE_CXX_COMPILER="$cxx")
[[ -n $cc ]] && compilers+=(-DCMAKE_C_COMPILER="$cc")
mkdir -p "$work"
"$src/tools/gpu/stage-deps.sh" "$work/deps" >/dev/null
prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
if [[ ! -f $work/build.ninja ]]; then
  cmake -S "$src" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DHPCBENCH_DEPS_DIR="$work/deps" -DHPCBENCH_BUILD_TESTS=OFF -DHPCBENCH_BUILD_BENCH=OFF \
    -DHPCBENCH_WITH_TENSORBOARD=OFF "${compilers[@]}" >"$work/configure.log" 2>&1 ||
    { tail -40 "$work/configure.log"; exit 1; }
fi
export CCACHE_BASEDIR=$src CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# This build's own ccache counters (the cache's are shared with every other build).
export CCACHE_STATSLOG=$work/ccache-stats.log
rm -f "$CCACHE_STATSLOG"
cmake --build "$work" --target hpcbench -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -60 "$work/build.log"; exit 1; }
if command -v ccache >/dev/null && [[ -f $CCACHE_STATSLOG ]]; then
  echo "ccache, this build:"
  ccache --show-log-stats | grep -E 'Hits|Misses|calls' || true
fi
"$work/hpcbench" --version
# Staged headers only: nothing from /usr/include's -dev packages, and no Debian library linked.
grep -q "HPCBENCH_DEPS_DIR:PATH=$work/deps" "$work/CMakeCache.txt"
if ldd "$work/hpcbench" | grep -E 'lib(fmt|spdlog|tomlplusplus|utf8proc)\.so'; then
  echo "the staged-headers binary links a Debian library (above)" >&2
  exit 1
fi
echo "staged-headers build OK"
