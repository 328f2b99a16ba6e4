#!/usr/bin/env bash
# Installs whatever is missing and builds hpcbench; quick when all is there.
# Sourced by tools/hpcb. Sets HPCBENCH_PY (the venv's python) and HPCBENCH_BUILD.
set -euo pipefail

HPCBENCH_ROOT=${HPCBENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
HPCBENCH_BUILD=${HPCBENCH_BUILD:-$HPCBENCH_ROOT/build}
say() { printf '[setup] %s\n' "$*" >&2; }

# --- 1. Debian packages ------------------------------------------------------
APT_PACKAGES=(cmake ninja-build g++ clang ccache pkg-config git python3 python3-venv
  libcli11-dev libfmt-dev libspdlog-dev catch2 nlohmann-json3-dev libutf8proc-dev
  libtomlplusplus-dev libgloo-dev libcurl4-openssl-dev gnuplot-nox
  libprotobuf-dev protobuf-compiler)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A python3 from elsewhere (pyenv, modules) is fine; only Debian's needs python3-venv.
if [[ " ${missing[*]} " == *" python3-venv "* ]] && python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
fi
if [[ " ${missing[*]} " == *" python3 "* ]] && command -v python3 >/dev/null; then
  missing=("${missing[@]/python3}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    say "missing Debian packages: ${missing[*]}"
    say "install them (sudo apt-get install ${missing[*]}) or build on a machine where you are root"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- 2. Python virtual environment (LibTorch + the reference stack) ----------
# Kept outside the clone and keyed by requirements.txt, so fresh clones (CI)
# reuse it instead of downloading gigabytes again.
req="$HPCBENCH_ROOT/requirements.txt"
key=$(sha256sum "$req" | cut -c1-12)
venv_root=${HPCBENCH_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/hpcbench}
HPCBENCH_VENV=${HPCBENCH_VENV:-$venv_root/venv-$key}
# The installer is uv (from PyPI, pinned), which downloads the wheels in
# parallel, does not byte-compile them (below, for the tests only) and
# links the files from its cache: the 2.8 GB of torch and its CUDA libraries
# install in ~25 s on this project's 2-core machine, where pip took ~85 s
# (~50 s with --no-compile). uv sits beside the venvs, installed with the
# system Python's pip where it has one, so the venv is made without pip of
# its own: ensurepip and then pip installing uv into the venv took 13 s of a
# fresh machine's first command, this 6 s. Without a system pip, the venv's
# pip installs uv; pip --no-compile is the fallback where uv cannot be
# installed. uv's cache sits beside the venvs too (hard links need the same
# file system); UV_CACHE_DIR overrides it.
UV_VERSION=0.13.9
uv_home=$venv_root/uv-$UV_VERSION
# Only when something is to be installed.
uv_bootstrap() {
  [[ ! -x "$uv_home/bin/uv" && ! -x "$HPCBENCH_VENV/bin/uv" ]] || return 0
  python3 -m pip --version >/dev/null 2>&1 || return 0
  mkdir -p "$venv_root"
  rm -rf "$uv_home.partial"
  if python3 -m pip install -q --disable-pip-version-check --target "$uv_home.partial" "uv==$UV_VERSION" >/dev/null 2>&1; then
    mv "$uv_home.partial" "$uv_home"
  else
    rm -rf "$uv_home.partial"
  fi
}
uv_bin() {
  if [[ -x "$uv_home/bin/uv" ]]; then echo "$uv_home/bin/uv"; elif [[ -x "$HPCBENCH_VENV/bin/uv" ]]; then echo "$HPCBENCH_VENV/bin/uv"; fi
}
py_install() {
  uv_bootstrap
  if [[ -z $(uv_bin) ]]; then
    [[ -x "$HPCBENCH_VENV/bin/pip" ]] || "$HPCBENCH_VENV/bin/python" -m ensurepip -q >/dev/null
    "$HPCBENCH_VENV/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION" ||
      say "could not install uv $UV_VERSION from PyPI; installing with pip instead (slower)"
  fi
  if [[ -n $(uv_bin) ]]; then
    UV_CACHE_DIR=${UV_CACHE_DIR:-$venv_root/uv-cache} "$(uv_bin)" pip install -q \
      --python "$HPCBENCH_VENV/bin/python" "$@"
  else
    "$HPCBENCH_VENV/bin/pip" install -q --disable-pip-version-check --no-compile "$@"
  fi
}
if [[ ! -f "$HPCBENCH_VENV/.complete" ]]; then
  say "creating the virtual environment $HPCBENCH_VENV (torch and the reference stack; a few GB, once)"
  rm -rf "$HPCBENCH_VENV"
  mkdir -p "$(dirname "$HPCBENCH_VENV")"
  uv_bootstrap
  if [[ -n $(uv_bin) ]]; then python3 -m venv --without-pip "$HPCBENCH_VENV"; else python3 -m venv "$HPCBENCH_VENV"; fi
  py_install -r "$req"
  touch "$HPCBENCH_VENV/.complete"
fi
# HPCBENCH_TEST_TOOLS=0 (tools/hpcb main): the binary and the main job use
# only LibTorch, so the test-only tools below wait for tools/hpcb test.
test_tools=${HPCBENCH_TEST_TOOLS:-1}
extra="$HPCBENCH_ROOT/requirements-extra.txt"
extra_key=$(sha256sum "$extra" | cut -c1-12)
if [[ $test_tools != 0 && ! -f "$HPCBENCH_VENV/.extra-$extra_key" ]]; then
  say "installing requirements-extra.txt into $HPCBENCH_VENV"
  py_install -r "$extra"
  touch "$HPCBENCH_VENV/.extra-$extra_key"
fi
# uv does not byte-compile, and where PYTHONDONTWRITEBYTECODE is set (it is
# on this project's machines) Python never writes the .pyc files either: each
# of the tests' reference processes then compiled torch's modules again, and
# the suite ran 7 minutes longer (gpu_validate_dry 205 s -> 450 s). Compiled
# once here instead (32 s on 2 cores), for the tests only: the main job runs
# no Python.
if [[ $test_tools != 0 && ! -f "$HPCBENCH_VENV/.bytecode-$extra_key" ]]; then
  say "byte-compiling the virtual environment's Python modules (once, for the tests' reference processes)"
  site=$("$HPCBENCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # A module that does not compile (a package's Python 2 example, say) is
  # imported by nobody here; it is left to Python, as pip leaves it.
  "$HPCBENCH_VENV/bin/python" -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
  touch "$HPCBENCH_VENV/.bytecode-$extra_key"
fi
# The official SQuAD evaluate-v1.1.py / evaluate-v2.0.py, which
# tests/reference/squad_eval_reference.py scores against, are not kept in
# the repository: the sdist of datasets 2.14.7 on PyPI carries them as its
# squad and squad_v2 metrics, and they are unpacked into the venv once.
squad_eval="$HPCBENCH_VENV/share/squad-eval"
if [[ $test_tools != 0 && ! -f "$squad_eval/.complete" ]]; then
  say "fetching the official SQuAD evaluation scripts (datasets==2.14.7 sdist) into $squad_eval"
  tmp=$(mktemp -d)
  # uv has no `download`: pip, into the venv where it was made without it.
  [[ -x "$HPCBENCH_VENV/bin/pip" ]] || py_install pip
  "$HPCBENCH_VENV/bin/pip" download -q datasets==2.14.7 --no-binary :all: --no-deps -d "$tmp" >/dev/null
  tar -xzf "$tmp/datasets-2.14.7.tar.gz" -C "$tmp" \
    datasets-2.14.7/metrics/squad/evaluate.py datasets-2.14.7/metrics/squad_v2/evaluate.py
  mkdir -p "$squad_eval"
  cp "$tmp/datasets-2.14.7/metrics/squad/evaluate.py" "$squad_eval/evaluate_v1_1.py"
  cp "$tmp/datasets-2.14.7/metrics/squad_v2/evaluate.py" "$squad_eval/evaluate_v2_0.py"
  rm -rf "$tmp"
  (cd "$squad_eval" && sha256sum --quiet -c - <<'EOF'
7829743b8de9a51c47fac562e608417eb48bf81c5aa78222cff71f73fad0a624  evaluate_v1_1.py
a15fd71be3bc594a0a7efba3e070a25e984d75ed3a135663a75bc5c6e4cf57c8  evaluate_v2_0.py
EOF
  ) || { say "the SQuAD evaluation scripts in $squad_eval are not the expected ones"; exit 1; }
  touch "$squad_eval/.complete"
fi
HPCBENCH_PY="$HPCBENCH_VENV/bin/python"
export HPCBENCH_PY HPCBENCH_VENV

# --- 3. Configure and build -------------------------------------------------
# The fused CUDA kernels (lib/kernels/*.cu) are nvcc's compiles for two GPU
# architectures, 30 CPU-s of the hpcbench target's cold build (README, where
# the build's time goes), and the PyPI torch wheel is a CUDA build, so nvcc ran
# wherever /usr/local/cuda is. HPCBENCH_KERNELS_ONLY_WITH_GPU=1 (tools/hpcb main) leaves
# them out on a machine with no NVIDIA GPU, whose binary only ever runs on the
# CPU, where --fused takes the ATen composites anyway; the build folder is
# marked, and the next full build (tools/hpcb test) configures it again with
# them, so that the suite compiles and checks them. The GPU machines build
# with their own staged configuration (tools/gpu), not through here.
# The C++ compiler: Clang where it is 14 or newer and CXX names none. It
# compiles this project's LibTorch-heavy code in two thirds of GCC's CPU time
# (the hpcbench target from cold on 2 cores: 855 CPU-s with GCC 12, 545 with
# Clang 14; README, where the build's time goes), mostly because its
# precompiled header carries the template instantiations
# (-fpch-instantiate-templates) that GCC makes again in every translation
# unit (an empty file with the LibTorch header costs 9.6 CPU-s with GCC, 1.9
# with Clang). GCC builds the same code (the GPU machines' staged build does);
# CXX=g++ picks it here. nvcc keeps its own host compiler.
compiler=()
clang_major=$(clang++ -dumpversion 2>/dev/null | cut -d. -f1 || true)
if [[ -z ${CXX:-} && $clang_major =~ ^[0-9]+$ ]] && ((clang_major >= 14)) && command -v clang >/dev/null; then
  compiler=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
fi
kernels_mark="$HPCBENCH_BUILD/.cuda-kernels-left-out"
has_gpu() { compgen -G '/dev/nvidia[0-9]*' >/dev/null || nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }
if [[ ! -f "$HPCBENCH_BUILD/build.ninja" ]]; then
  # torch.utils.cmake_prefix_path without importing torch: the import took
  # 6 s here (uv leaves no bytecode, and PYTHONDONTWRITEBYTECODE keeps Python
  # from writing any), finding the package 0.04 s.
  torch_prefix=$("$HPCBENCH_PY" -c 'import importlib.util, os
print(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "share", "cmake"))')
  kernels=()
  if [[ ${HPCBENCH_KERNELS_ONLY_WITH_GPU:-0} == 1 ]] && ! has_gpu; then
    kernels=(-DHPCBENCH_CUDA_KERNELS=OFF)
    say "no NVIDIA GPU here: the binary is built without the fused CUDA kernels (tools/hpcb test builds them)"
  fi
  say "configuring $HPCBENCH_BUILD against LibTorch in $torch_prefix"
  # Python_EXECUTABLE too: LibTorch's CMake looks for a Python of its own
  # (FindPython), which then has no PATH to search (configure 11.3 -> 10.0 s).
  cmake -S "$HPCBENCH_ROOT" -B "$HPCBENCH_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix" -DPython3_EXECUTABLE="$HPCBENCH_PY" -DPython_EXECUTABLE="$HPCBENCH_PY" \
    "${compiler[@]}" "${kernels[@]}" \
    ${HPCBENCH_CMAKE_ARGS:-} >"$HPCBENCH_BUILD.configure.log" 2>&1 ||
    { cat "$HPCBENCH_BUILD.configure.log" >&2; exit 1; }
  if ((${#kernels[@]})); then touch "$kernels_mark"; else rm -f "$kernels_mark"; fi
elif [[ -f $kernels_mark && ${HPCBENCH_KERNELS_ONLY_WITH_GPU:-0} != 1 ]]; then
  say "configuring $HPCBENCH_BUILD again with the fused CUDA kernels (tools/hpcb main left them out)"
  cmake -B "$HPCBENCH_BUILD" -DHPCBENCH_CUDA_KERNELS=AUTO >>"$HPCBENCH_BUILD.configure.log" 2>&1 ||
    { cat "$HPCBENCH_BUILD.configure.log" >&2; exit 1; }
  rm -f "$kernels_mark"
fi
# Relative paths in the cache keys let fresh clones (CI) hit the cache that
# earlier builds in other folders filled.
export CCACHE_BASEDIR="$HPCBENCH_ROOT"
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# HPCBENCH_TARGETS: what to build (tools/hpcb main: the binary alone, which
# the main job needs; unset: everything, the tests and benchmarks too).
targets=()
for t in ${HPCBENCH_TARGETS:-}; do targets+=(--target "$t"); done
say "building (cmake --build $HPCBENCH_BUILD${HPCBENCH_TARGETS:+ --target $HPCBENCH_TARGETS})"
# Ninja's progress lines are dropped; errors and warnings stay. pipefail keeps
# a failed build failing.
cmake --build "$HPCBENCH_BUILD" -j"$(nproc)" "${targets[@]}" | sed -u '/^\[[0-9]*\/[0-9]*\] /d'
