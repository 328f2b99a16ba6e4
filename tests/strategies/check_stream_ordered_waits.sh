#!/usr/bin/env bash
# Every wait on a c10d Work goes through Comm::wait (lib/distributed/process_group.cpp),
# and there exactly one passes a timeout: the Gloo branch, where the host is
# meant to block. A wait with a timeout anywhere else would make NCCL poll on
# the host and serialise every overlapped collective.
set -euo pipefail
root=${1:?usage: check_stream_ordered_waits.sh SOURCE_DIR}
cd "$root"
status=0
# c10d waits: work->wait(...), .work->wait(...), w->wait(...) on Work handles.
outside=$(grep -rnE '(work|Work|w)->wait\(' lib apps bench --include='*.cpp' --include='*.h' |
  grep -v '^lib/distributed/process_group.cpp:' || true)
if [[ -n "$outside" ]]; then
  echo "c10d waits outside Comm::wait (use Comm::wait, which orders streams on NCCL):"
  echo "$outside"
  status=1
fi
with_timeout=$(grep -nE -- '->wait\([^)]' lib/distributed/process_group.cpp || true)
count=$(printf '%s' "$with_timeout" | grep -c . || true)
if [[ "$count" != 1 ]]; then
  echo "expected exactly one wait with a timeout (Gloo's) in lib/distributed/process_group.cpp, found $count:"
  echo "$with_timeout"
  status=1
else
  line=${with_timeout%%:*}
  if ! sed -n "$((line - 2)),$((line))p" lib/distributed/process_group.cpp | grep -q 'WaitMode::HostBlocking'; then
    echo "the wait with a timeout (line $line) is not in the WaitMode::HostBlocking branch:"
    sed -n "$((line - 2)),$((line))p" lib/distributed/process_group.cpp
    status=1
  fi
fi
# Comm::wait must take no timeout from its callers.
if grep -nE 'void wait\([^)]*(milliseconds|timeout)' lib/distributed/process_group.h; then
  echo "Comm::wait must not take a timeout"
  status=1
fi
if [[ $status == 0 ]]; then echo "stream-ordered waits: ok"; fi
exit $status
