#!/usr/bin/env bash
# check_layers.py on the tree as it is (must pass), then on fabricated faults
# it must fail on, each naming the fault: an include back up (train including
# a strategy's header), one sideways (core including the results' format), a
# table of libraries missing a row, a table out of order.
set -uo pipefail
py=${1:?usage: test_layers.sh PYTHON SOURCE_DIR BUILD_DIR}
src=$(realpath "${2:?}")
build=$(realpath "${3:?}")
check="$py $src/tests/build/check_layers.py $src"
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

$check "$build" || { echo "FAIL: the tree's layers"; status=1; }

# must_fail WHAT PATTERN ARGS...: the check (of the build folder $checked,
# the real one unless said) exits non-zero and says PATTERN.
checked=$build
must_fail() {
  local what=$1 pattern=$2
  shift 2
  local out
  if out=$($check "$checked" "$@" 2>&1); then
    echo "FAIL: $what passed the check"
    status=1
  elif ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL: $what: the check did not say '$pattern':"
    echo "$out" | sed 's/^/  /'
    status=1
  else
    echo "ok: $what fails: $(grep -F -- "$pattern" <<<"$out" | head -1)"
  fi
}

must_fail "train including a strategy's header" \
  "lib/train/config.cpp (hpcbench_train) includes strategies/strategy.h (hpcbench_strategies)" \
  --include lib/train/config.cpp=strategies/strategy.h
must_fail "core including the results' format" \
  "lib/core/error.h (hpcbench_core) includes results/run_record.h (hpcbench_results)" \
  --include lib/core/error.h=results/run_record.h
must_fail "specs including the model" \
  "lib/specs/label.cpp (hpcbench_specs) includes model/bert.h (hpcbench_model)" \
  --include lib/specs/label.cpp=model/bert.h

# A copy of the build folder's include folders where train exposes the whole
# strategies folder (as the specs once did): two libraries for one header.
mkdir -p "$tmp/build"
cp -a "$build/include" "$tmp/build/include"
cp "$build/library_graph.txt" "$tmp/build/"
ln -s "$src/lib/strategies" "$tmp/build/include/hpcbench_train/strategies"
checked=$tmp/build
must_fail "a header two libraries expose" "lib/strategies/strategy.h is exposed by hpcbench_strategies and hpcbench_train"
checked=$build

sed '/^| `hpcbench_train`/d' "$src/docs/architecture.md" >"$tmp/no-train.md"
must_fail "a table without train" "the table of libraries leaves out hpcbench_train" --doc "$tmp/no-train.md"

# The row of core moved to the end: core is then listed above what links it.
awk '/^\| `hpcbench_core`/ {core=$0; next} {print} END {}' "$src/docs/architecture.md" |
  awk -v core="$(grep '^| `hpcbench_core`' "$src/docs/architecture.md")" \
    '{print} /^\| `hpcbench_cli`/ {print core}' >"$tmp/core-last.md"
must_fail "a table out of order" "is listed below hpcbench_core, which it links" --doc "$tmp/core-last.md"

sed '/^  train --> specs$/d' "$src/docs/architecture.md" >"$tmp/picture.md"
must_fail "a picture missing an arrow" "the picture of what links what is not the graph's" --doc "$tmp/picture.md"

exit $status
