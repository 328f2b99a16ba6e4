#!/usr/bin/env bash
# Where a cold build's time goes: builds TARGET (default hpcbench) from nothing
# in a build folder of its own, with ccache off, and records the CPU seconds
# (user + system, /usr/bin/time) of every compile, then prints the total and
# the heaviest translation units. CPU seconds, not wall time: on a shared
# machine the wall clock measures the neighbours; the CPU a compile takes
# does not change with them (much), so two commits compare fairly.
#
#   tools/build-profile.sh [-o FOLDER] [-j N] [TARGET...]
#     FOLDER: the build folder (default build-profile/ in this worktree; wiped)
#   tools/build-profile.sh --report LOG [LOG2]
#     the summary of an earlier run's compile-times.log; with LOG2, the two
#     side by side (per unit: seconds in each, + new, - gone)
#   tools/build-profile.sh --schedule LOG [CORES]
#     the wall time those compiles take on CORES (2) as ninja orders them
#
# HPCBENCH_PROFILE_LAUNCHER: a command to run each compile through (a
# throttle, say); it is timed with the compile. HPCBENCH_CMAKE_ARGS: more
# configure arguments (-DHPCBENCH_UNITY_BATCH=8, say). Needs the virtual
# environment tools/setup.sh makes (its LibTorch).
#
# A unit's name is its object file (unity batches: <target>_<group>_<n>.cpp.o,
# the group unity or cold, cmake/HpcbenchUnity.cmake;
# the precompiled header: cmake_pch.hxx.gch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

report() {
  local log=$1
  awk '{u += $1; s += $2; n++} END {printf "%d units, %.0f CPU-s (user %.0f, sys %.0f)\n", n, u + s, u, s}' "$log"
  echo "heaviest 20 (CPU-s, unit):"
  awk '{printf "%8.1f  %s\n", $1 + $2, $3}' "$log" | sort -rn | head -20
}
compare() {
  # Units keyed by their object's path below the build folder.
  awk 'FNR == 1 {f++} {k = $3; sub(/^.*\/CMakeFiles\//, "", k); t[k, f] = $1 + $2; keys[k] = 1; tot[f] += $1 + $2}
       END {printf "total: %.0f -> %.0f CPU-s\n", tot[1], tot[2];
            for (k in keys) {a = t[k, 1]; b = t[k, 2];
              m = (a == "" ? "+" : (b == "" ? "-" : " "));
              printf "%8.1f %8.1f %+8.1f %s %s\n", a, b, b - a, m, k}}' "$1" "$2" |
    { IFS= read -r head; echo "$head"; echo "  before    after   change   unit (+ new, - gone), by change"; sort -k3,3 -gr; }
}
# The wall time the logged compiles take on N cores as ninja 1.11 runs them: a ready
# compile is started in build.ninja's order (not longest first), and a unit that
# includes the precompiled header waits for it. Links and code generation left out.
schedule() {  # log build-folder cores
  python3 - "$@" <<'PY'
import re, sys
log, build, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpu = {}
for line in open(log):
    u, s, obj = line.split()[:3]
    cpu[obj] = float(u) + float(s)
order, pch_users, pch = [], set(), None
text = open(f"{build}/build.ninja").read()
for m in re.finditer(r"^build (\S+\.(?:o|gch)): \S+.*?(?=^build |\Z)", text, re.M | re.S):
    obj = m.group(1)
    if obj not in cpu:
        continue
    order.append(obj)
    if obj.endswith(".gch"):
        pch = obj
    elif "cmake_pch.hxx.gch" in m.group(0):
        pch_users.add(obj)
free, pch_done, pending = [0.0] * cores, None, list(order)
while pending:
    c = min(range(cores), key=free.__getitem__)
    now = free[c]
    ready = [o for o in pending if o not in pch_users or (pch_done is not None and pch_done <= now)]
    if not ready:
        free[c] = pch_done if pch_done is not None and pch_done > now else min(t for t in free if t > now)
        continue
    o = ready[0]
    pending.remove(o)
    free[c] = now + cpu[o]
    if o == pch:
        pch_done = free[c]
print(f"expected wall on {cores} cores (ninja's order, compiles only): {max(free):.0f} s")
PY
}
if [[ ${1:-} == --schedule ]]; then
  [[ -f ${2:-} && -f $(dirname "${2:-}")/build.ninja ]] || { echo "$0: --schedule needs a compile-times.log beside its build.ninja" >&2; exit 2; }
  schedule "$2" "$(dirname "$2")" "${3:-2}"
  exit 0
fi
if [[ ${1:-} == --report ]]; then
  [[ -f ${2:-} ]] || { echo "$0: --report needs a compile-times.log (got '${2:-}')" >&2; exit 2; }
  if [[ -n ${3:-} ]]; then
    [[ -f $3 ]] || { echo "$0: no such log: $3" >&2; exit 2; }
    compare "$2" "$3"
  else
    report "$2"
  fi
  exit 0
fi

out=$root/build-profile
jobs=2
while [[ ${1:-} == -* ]]; do
  case $1 in
    -o) out=$(realpath -m "${2:?-o needs a folder}"); shift 2 ;;
    -j) jobs=${2:?-j needs a number}; shift 2 ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
targets=("${@:-hpcbench}")
[[ -x /usr/bin/time ]] || { echo "$0: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
[[ $out != "$root" && $out != "$root/build" ]] || { echo "$0: -o $out would wipe a build in use; name another folder" >&2; exit 2; }

# The venv's LibTorch, as tools/setup.sh finds it (without installing anything).
key=$(sha256sum "$root/requirements.txt" | cut -c1-12)
py=${HPCBENCH_PY:-${HPCBENCH_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/hpcbench}/venv-$key/bin/python}
[[ -x $py ]] || { echo "$0: no virtual environment at $py; run tools/hpcb main once (or set HPCBENCH_PY)" >&2; exit 1; }
torch_prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

rm -rf "$out"
mkdir -p "$out"
log=$out/compile-times.log
# The timing launcher stands where ccache would (HPCBENCH_CCACHE), for C++
# and CUDA alike; ccache itself stays off so that every unit is compiled.
cat >"$out/timed-compile.sh" <<EOF
#!/usr/bin/env bash
obj=?
prev=
for a in "\$@"; do [[ \$prev == -o ]] && obj=\$a; prev=\$a; done
t=\$(mktemp)
rc=0
/usr/bin/time -f '%U %S' -o "\$t" ${HPCBENCH_PROFILE_LAUNCHER:-} "\$@" || rc=\$?
printf '%s %s\n' "\$(tail -1 "\$t")" "\$obj" >>"$log"
rm -f "\$t"
exit \$rc
EOF
chmod +x "$out/timed-compile.sh"
export CCACHE_DISABLE=1
echo "configuring $out ($(git -C "$root" rev-parse --short=12 HEAD))" >&2
# shellcheck disable=SC2086
cmake -S "$root" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPython3_EXECUTABLE="$py" -DHPCBENCH_CCACHE="$out/timed-compile.sh" ${HPCBENCH_CMAKE_ARGS:-} \
  >"$out/configure.log" 2>&1 || { cat "$out/configure.log" >&2; exit 1; }
t=(); for x in "${targets[@]}"; do t+=(--target "$x"); done
echo "building ${targets[*]} with -j$jobs: $(ninja -C "$out" -t commands "${targets[@]}" | grep -c -- ' -c \| -x c++-header\|nvcc') compiles" >&2
s=$(date +%s)
cmake --build "$out" -j"$jobs" "${t[@]}" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; exit 1; }
echo "built in $(($(date +%s) - s)) s wall at -j$jobs, load $(cut -d' ' -f1-3 /proc/loadavg) (log: $log)"
report "$log"
schedule "$log" "$out" "$jobs"
