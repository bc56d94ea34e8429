#!/usr/bin/env bash
# Issue 12's host-safety check: `make test` N times in a row (default 5) in
# one clone of this checkout's HEAD while `make test` runs again and again
# in a second clone beside it, both on this host's real engines (start them
# first: scripts/local-k8s.sh start; scripts/local-slurm.sh start) with the
# caller's SYNERGY_REQUIRE. Prints one line per run and exits non-zero if
# any of the N runs failed; logs stay under OUTDIR (default a new temp dir).
#
# Usage: SYNERGY_REQUIRE=... scripts/test-beside.sh [N] [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
n="${1:-5}"
out="${2:-$(mktemp -d /tmp/synergy-beside-XXXXXX)}"
mkdir -p "$out"
head=$(git rev-parse HEAD)
for c in a b; do
  rm -rf "$out/$c"
  git clone -q "$PWD" "$out/$c" && git -C "$out/$c" checkout -q "$head" || exit 1
done
echo "test-beside: $n runs of make test at ${head:0:7} beside a looping one; SYNERGY_REQUIRE=${SYNERGY_REQUIRE:-}; logs in $out"

stop="$out/stop"
rm -f "$stop"
(
  i=0
  while [ ! -e "$stop" ]; do
    i=$((i + 1))
    start=$(date +%s)
    if make -C "$out/b" test >"$out/beside-$i.log" 2>&1; then r=ok; else r=FAIL; fi
    echo "beside run $i: $r in $(($(date +%s) - start)) s" >>"$out/beside.txt"
  done
) &
beside=$!

failed=0
for i in $(seq "$n"); do
  start=$(date +%s)
  if make -C "$out/a" test >"$out/run-$i.log" 2>&1; then r=ok; else r=FAIL; failed=$((failed + 1)); fi
  echo "run $i: $r in $(($(date +%s) - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$r" = FAIL ]; then grep -E '^(--- FAIL|FAIL|panic)' "$out/run-$i.log" | head -20; fi
done
touch "$stop"
echo "waiting for the run beside to finish its current make test"
wait "$beside"
cat "$out/beside.txt"
echo "test-beside: $((n - failed)) of $n passed"
[ "$failed" = 0 ]
