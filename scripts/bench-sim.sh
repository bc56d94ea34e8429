#!/usr/bin/env bash
# Times the paper's default simulation point — 128 GPUs (default preset),
# 9 jobs/hour, split 20/70/10, single-GPU jobs, window 4000–4999, FIFO — for
# the fair and tune strategies, one run at a time (--workers 1), and prints
# each run's wall time and mean JCT. Target: under 2 s per point.
#
# Usage: scripts/bench-sim.sh [SEED...]   (default seeds: 1 2 3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/synergy
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/synergy
seeds=("${@:-1}")
[ $# -eq 0 ] && seeds=(1 2 3)
printf '%-8s %-5s %10s %14s\n' strategy seed wall_s mean_jct_h
for s in fair tune; do
	for seed in "${seeds[@]}"; do
		start=$(date +%s.%N)
		out=$("$bin" simulate --cluster default --loads 9 --split 20,70,10 --window 4000-4999 \
			--strategies "$s" --policies fifo --seed "$seed" --workers 1 --json 2>/dev/null)
		end=$(date +%s.%N)
		jct=$(grep -m1 '"mean_hours"' <<<"$out" | tr -dc '0-9.')
		printf '%-8s %-5s %10.3f %14.2f\n' "$s" "$seed" "$(echo "$end - $start" | bc)" "$jct"
	done
done
