#!/usr/bin/env bash
# Copies the C++ dependencies' headers (and libutf8proc.a; curl's headers) from this Debian
# machine into one folder that travels to a machine without them (the GPU
# machines: CMake, nvcc and torch, no -dev packages, no network). Build there
# with -DHPCBENCH_DEPS_DIR=<folder>. Usage: tools/gpu/stage-deps.sh [.gpu-deps]
set -euo pipefail
out=${1:-.gpu-deps}
rm -rf "$out"
mkdir -p "$out/include" "$out/lib"
for d in fmt spdlog CLI nlohmann toml++ gloo; do
  cp -r "/usr/include/$d" "$out/include/"
done
cp /usr/include/utf8proc.h "$out/include/"
# curl's headers only: `fetch` loads the machine's own libcurl.so.4 at run time (its TLS and CA set-up).
cp -r /usr/include/x86_64-linux-gnu/curl "$out/include/"
cp /usr/lib/x86_64-linux-gnu/libutf8proc.a "$out/lib/"
du -sh "$out"
