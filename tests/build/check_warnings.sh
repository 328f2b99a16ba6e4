#!/usr/bin/env bash
# check_warnings.sh BUILD_DIR LAUNCHER CXX: fails, printing them, while any
# object in BUILD_DIR was compiled with a warning (the logs LAUNCHER keeps in
# BUILD_DIR/compile-warnings); first checks that LAUNCHER keeps the log of a
# compile that warns and drops it when the object compiles quietly.
set -uo pipefail
build=$1 launcher=$2 cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir obj
printf 'int f(int x) { int unused; return x; }\n' >w.cpp
"$launcher" logs "$cxx" -Wall -c w.cpp -o obj/w.o 2>/dev/null
grep -q "unused variable" "logs/obj%w.o.log" 2>/dev/null || { echo "FAIL: the launcher kept no log of a compile that warns"; exit 1; }
printf 'int f(int x) { return x; }\n' >w.cpp
"$launcher" logs "$cxx" -Wall -c w.cpp -o obj/w.o 2>/dev/null
[[ ! -e "logs/obj%w.o.log" ]] || { echo "FAIL: the launcher kept the log of a compile that no longer warns"; exit 1; }

logs=$build/compile-warnings
[[ -d $build/CMakeFiles ]] || { echo "FAIL: $build is not a build folder"; exit 1; }
count=0
shopt -s nullglob
for log in "$logs"/*.log; do
  obj=$(basename "$log" .log)
  obj=${obj//%//}
  # An object no longer built (a removed source) leaves its log behind.
  [[ -e $build/$obj ]] || continue
  echo "== $obj"
  cat "$log"
  count=$((count + 1))
done
if ((count)); then
  echo "FAIL: $count object(s) compiled with warnings (above); mend the code, or silence a proven false positive at its line with a comment naming the compiler bug"
  exit 1
fi
echo "OK: no object in $build compiled with a warning"
