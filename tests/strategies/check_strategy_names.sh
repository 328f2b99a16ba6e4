#!/usr/bin/env bash
# Outside its own folder and its line in the registry, no file under lib/ or
# apps/ names a strategy (as the string the code would compare with): the
# commands know strategies only through the registry's specs
# (lib/specs/registry.h).
set -euo pipefail
root=${1:?usage: check_strategy_names.sh SOURCE_DIR}
cd "$root"
status=0
names=$(sed -n 's/^HPCBENCH_STRATEGY(\(.*\))$/\1/p' lib/specs/registry.inc)
[[ -n "$names" ]] || { echo "no HPCBENCH_STRATEGY lines in lib/specs/registry.inc"; exit 1; }
for name in $names; do
  # A line that uses the word for something else says so ("not the strategy").
  outside=$(grep -rn "\"$name\"" lib apps | grep -v "^lib/strategies/$name/" | grep -v "not the strategy" || true)
  if [[ -n "$outside" ]]; then
    echo "\"$name\" named outside lib/strategies/$name/:"
    echo "$outside" | sed 's/^/  /'
    status=1
  fi
done
if [[ $status == 0 ]]; then echo "strategy names: each only in its folder ($(echo $names))"; fi
exit $status
