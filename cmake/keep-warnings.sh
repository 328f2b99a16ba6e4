#!/usr/bin/env bash
# keep-warnings.sh DIR COMMAND...: the compiler launcher (HpcbenchCompiler.cmake).
# Runs COMMAND (ccache and the compiler) and passes its output on; where its
# stderr holds a warning, keeps that in DIR/<object, / as %>.log, otherwise
# removes the object's earlier log. ccache replays a cached compile's stderr,
# so a build from the cache leaves the same logs. tests/build's
# test_build_warnings fails while any object of the build has one.
dir=$1
shift
out= prev=
for a in "$@"; do
  [[ $prev == -o ]] && out=$a
  prev=$a
done
err=$(mktemp "${TMPDIR:-/tmp}/hpcbench-cc.XXXXXX")
"$@" 2>"$err"
rc=$?
cat "$err" >&2
if [[ -n $out ]]; then
  log="$dir/${out//\//%}.log"
  if grep -q 'warning:' "$err"; then
    mkdir -p "$dir" && mv "$err" "$log"
  else
    rm -f "$log"
  fi
fi
rm -f "$err"
exit $rc
