#!/usr/bin/env bash
# Times the README's two commands from nothing, as a newcomer meets them on a
# fresh machine: purges the Debian packages tools/setup.sh installs (and
# apt's downloaded .deb files), moves ~/.cache/hpcbench (the venv and uv's
# cache), ccache's, pip's and uv's caches aside (to *.keep-<pid>, printed at
# the end; delete or move them back), clones this repository's HEAD afresh
# and runs `tools/hpcb main`, then `tools/hpcb test` (with CI=true, as
# .ci/run), each output line
# prefixed with the seconds since its command started.
#
#   tools/time-from-nothing.sh --purge     (as root; takes ~30 min on 2 cores)
#
# The packages it purges are set-up's list less those a machine of this kind
# starts with (cmake, g++, clang, git, pkg-config, python3). Run it on an otherwise
# idle machine: the figures are wall-clock.
set -uo pipefail
[[ ${1:-} == --purge ]] || { echo "usage: $0 --purge  (purges Debian packages and moves caches aside; see the header)" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (apt-get purge)" >&2; exit 2; }
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKGS="ninja-build ccache libcli11-dev libfmt-dev libspdlog-dev catch2 nlohmann-json3-dev libutf8proc-dev
  libtomlplusplus-dev libgloo-dev libcurl4-openssl-dev gnuplot-nox libprotobuf-dev protobuf-compiler"
apt-get purge -y -qq $PKGS >/dev/null 2>&1
apt-get autoremove -y -qq >/dev/null 2>&1
apt-get clean
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 && echo "still installed: $p"; done
cache=${XDG_CACHE_HOME:-$HOME/.cache}
for c in hpcbench ccache pip uv; do
  [[ -e $cache/$c ]] && mv "$cache/$c" "$cache/$c.keep-$$" && echo "moved $cache/$c to $cache/$c.keep-$$"
done
d=$(mktemp -d /tmp/from-nothing.XXXX)
git clone -q "$src" "$d/hpcbench" && cd "$d/hpcbench" || exit 1
echo "commit $(git rev-parse --short=12 HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for cmd in main test; do
  s=$(date +%s)
  # CI=true as .ci/run has it: the SLURM cluster cases fail instead of skipping.
  CI=true tools/hpcb $cmd 2>&1 | while IFS= read -r l; do echo "$(($(date +%s) - s)) $l"; done >"$d/$cmd.log"
  rc=${PIPESTATUS[0]}
  echo "tools/hpcb $cmd: exit $rc, $(($(date +%s) - s)) s (log: $d/$cmd.log)"
  grep -E '^[0-9]+ \[setup\]|main job: (baseline|runs in)|tests passed|Total Test time' "$d/$cmd.log" | cut -c1-120
  ((rc == 0)) || exit "$rc"
done
