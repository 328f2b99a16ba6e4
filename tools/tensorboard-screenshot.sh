#!/usr/bin/env bash
# The HParams table of a `report --tensorboard` folder as a PNG, taken with
# headless Chromium (Debian: apt-get install chromium) from a TensorBoard on
# 127.0.0.1. This is how docs/tensorboard-hparams.png was made.
# Usage: tools/tensorboard-screenshot.sh TB_DIR OUT.png [PYTHON]
set -euo pipefail
dir=$1 out=$2 py=${3:-python3}
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
setsid "$py" -m tensorboard.main --logdir "$dir" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
tb=$!
trap '{ kill -9 -- -$tb; wait $tb; } 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$port/data/runs" | grep -q . && break
  sleep 1
done
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size=2400,420 --virtual-time-budget=20000 --screenshot="$out" \
  "http://127.0.0.1:$port/?darkMode=false#hparams" >/dev/null 2>&1
rm -rf "$profile"
echo "wrote $out"
