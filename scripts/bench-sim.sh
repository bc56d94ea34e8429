#!/usr/bin/env bash
# Times whole simulations with `synergy simulate --workers 1` (one core), for
# the code in this working tree and, with -r REV, for a git revision in the
# same run: both binaries are built first, then each run goes base, current,
# base, current ..., one at a time, so that both see the same machine. For
# every run it prints wall and CPU seconds, and, against a revision, the
# current/base ratio of CPU time and whether the two printed the same results
# JSON (they must: the simulator's output may not change with its speed).
#
# Points (-p, comma-separated; default anchor,10k):
#   anchor   the paper's default: 128 GPUs, 9 jobs/h, split 20/70/10, window
#            4000-4999, FIFO, fair and tune (the Python original: ~400 CPU-s)
#   10k      10,000 GPUs (1,250 servers x 8, one cluster JSON group), 700 jobs/h,
#            window 50000-60000 (about 86,000 jobs), TUNE + FIFO
#   100k     100,000 GPUs (12,500 x 8), 7,000 jobs/h, window 500000-600000,
#            TUNE + FIFO (a revision without the server index takes hours:
#            give it BASE_TIMEOUT)
#   gavel    Gavel's mechanism on 36:36:36 with Gavel's generator, 1,000 jobs:
#            static (all at t = 0) and continuous (6 jobs/h, window 0-999), under
#            fifo_perf, isolated, max_min_fairness_perf and gandiva; needs Gavel's
#            simulation_throughputs.json (GAVEL_TPUT, or GAVEL_DIR of a checkout),
#            skipped otherwise. SEED is Gavel's --seed here too.
#
# Usage: scripts/bench-sim.sh [-r REV] [-p POINTS] [SEED...]   (default seed 1)
# Env: BASE_TIMEOUT / TIMEOUT (seconds per run; default none), GAVEL_TPUT, GAVEL_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="" points=anchor,10k
while getopts "r:p:h" opt; do
	case $opt in
	r) rev=$OPTARG ;;
	p) points=$OPTARG ;;
	*) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/current" ./cmd/synergy
bins=(current)
if [ -n "$rev" ]; then
	mkdir "$tmp/src"
	git archive "$rev" | tar -x -C "$tmp/src"
	(cd "$tmp/src" && go build -o "$tmp/base" ./cmd/synergy)
	bins=(base current)
	echo "base: $(git rev-parse --short "$rev") ($(git log -1 --format=%cs "$rev")); current: working tree of $(git rev-parse --short HEAD)"
fi
cluster() { # servers → a cluster JSON of that many 8-GPU Synergy default servers
	printf '{"name": "bench-%s", "groups": [{"count": %d, "gpus": 8, "cpus": 24, "mem_bytes": 500000000000}]}\n' "$1" "$1" >"$tmp/c$1.json"
	echo "$tmp/c$1.json"
}
tput=${GAVEL_TPUT:-${GAVEL_DIR:+$GAVEL_DIR/scheduler/simulation_throughputs.json}}

# run NAME BIN ARGS...: one timed run; prints "wall cpu" (or "timeout") and
# leaves the results JSON in $tmp/NAME.BIN.json.
run() {
	local name=$1 bin=$2
	shift 2
	local limit=${TIMEOUT:-0}
	[ "$bin" = base ] && limit=${BASE_TIMEOUT:-$limit}
	local t0 t1 c0 c1 rc=0 me=$BASHPID
	t0=$(date +%s.%N)
	c0=$(awk '{print $16+$17}' "/proc/$me/stat")
	if [ "$limit" != 0 ]; then
		timeout "$limit" "$tmp/$bin" simulate "$@" --workers 1 --json >"$tmp/$name.$bin.json" 2>/dev/null || rc=$?
	else
		"$tmp/$bin" simulate "$@" --workers 1 --json >"$tmp/$name.$bin.json" 2>/dev/null || rc=$?
	fi
	t1=$(date +%s.%N)
	c1=$(awk '{print $16+$17}' "/proc/$me/stat")
	if [ $rc -eq 124 ]; then
		echo "timeout"
		return
	fi
	[ $rc -eq 0 ] || { echo "$bin simulate $* failed (exit $rc)" >&2; exit 1; }
	# CPU of the finished child: this (sub)shell's cutime+cstime, in clock ticks.
	echo "$(echo "$t1 - $t0" | bc) $(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)"
}

printf '%-38s %-5s %10s %10s %10s %10s %8s %s\n' point seed base_wall base_cpu cur_wall cur_cpu cpu_x same_json
bench() { # bench NAME SEED ARGS...
	local name=$1 seed=$2
	shift 2
	local -A wall cpu
	for b in "${bins[@]}"; do
		read -r wall[$b] cpu[$b] <<<"$(run "$name" "$b" "$@" --seed "$seed")"
	done
	local bw=- bc=- ratio=- same=-
	if [ -n "$rev" ]; then
		bw=${wall[base]} bc=${cpu[base]:-}
		if [ "$bw" = timeout ]; then
			bw=">${BASE_TIMEOUT}" bc=-
		else
			ratio=$(echo "${cpu[current]} / $bc" | bc -l)
			cmp -s "$tmp/$name.base.json" "$tmp/$name.current.json" && same=yes || same=NO
		fi
	fi
	printf '%-38s %-5s %10s %10s %10.2f %10.2f %8s %s\n' "$name" "$seed" "$(fmt "$bw")" "$(fmt "$bc")" \
		"${wall[current]}" "${cpu[current]}" "$(fmt "$ratio")" "$same"
}
fmt() { if [[ $1 =~ ^[0-9.]+$ ]]; then printf '%.3g' "$1"; else printf '%s' "$1"; fi; }

for seed in "${seeds[@]}"; do
	for p in ${points//,/ }; do
		case $p in
		anchor)
			for s in fair tune; do
				bench "anchor-fifo+$s" "$seed" --cluster default --loads 9 --split 20,70,10 \
					--window 4000-4999 --strategies "$s" --policies fifo
			done
			;;
		10k)
			bench 10k-tune+fifo "$seed" --cluster "$(cluster 1250)" --loads 700 \
				--window 50000-60000 --strategies tune --policies fifo
			;;
		100k)
			bench 100k-tune+fifo "$seed" --cluster "$(cluster 12500)" --loads 7000 \
				--window 500000-600000 --strategies tune --policies fifo
			;;
		gavel)
			if [ -z "$tput" ] || [ ! -f "$tput" ]; then
				echo "gavel: skipped (set GAVEL_TPUT or GAVEL_DIR to Gavel's simulation_throughputs.json)"
				continue
			fi
			for pol in fifo_perf isolated max_min_fairness_perf gandiva; do
				bench "gavel-static1000-$pol" "$seed" --gavel-generate static --num-jobs 1000 \
					--throughputs "$tput" --cluster-spec 36:36:36 --policies "$pol"
				bench "gavel-cont1000-$pol" "$seed" --gavel-generate continuous --loads 6 --window 0-999 \
					--throughputs "$tput" --cluster-spec 36:36:36 --policies "$pol"
			done
			;;
		*) echo "unknown point $p" >&2; exit 2 ;;
		esac
	done
done
