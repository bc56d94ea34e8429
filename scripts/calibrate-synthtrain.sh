#!/usr/bin/env bash
# Check synthtrain's preset calibration on this machine: samples/s with one
# core (taskset -c 0, --workers 1) against two cores (taskset -c 0,1,
# --workers 2), data in the page cache. Throughput is taken from the metrics
# stream (samples over the span of ts after WARMUP iterations), as the
# profiler does.
#   scripts/calibrate-synthtrain.sh [DIR] [ITERATIONS]
# Expectations (docs in models/synthtrain): image ratio >= 1.6; language and
# audio within 5% (step-bound when cached).
set -euo pipefail
dir=${1:-/tmp/synthtrain-calib} iters=${2:-40} warmup=5
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin/synthtrain
(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/synthtrain)
declare -A size=([image]=120MiB [audio]=200MiB [language]=20MiB)

rate() { # metrics file -> samples/s after warm-up
	awk -v w="$warmup" -F'[:,]' '{
		for (i = 1; i < NF; i++) { if ($i ~ /"samples"/) s = $(i+1); if ($i ~ /"ts"/) ts = $(i+1) }
		n++; if (n == w) t0 = ts; if (n > w) { tot += s; t1 = ts }
	} END { if (t1 > t0) printf "%.1f", tot / (t1 - t0); else print "nan" }' "$1"
}

read -r load _ </proc/loadavg
echo "load average $load (other work on these cores skews the image ratio down)"
printf '%-9s %12s %12s %7s\n' preset "1 core/s" "2 cores/s" ratio
for preset in image audio language; do
	"$bin" gen --preset "$preset" --bytes "${size[$preset]}" --dir "$dir/$preset" >/dev/null
	cat "$dir/$preset"/*/* >/dev/null # into the page cache
	declare -A r=()
	for cores in 1 2; do
		m=$(mktemp)
		cpus=0; [[ $cores == 2 ]] && cpus=0,1
		SYNERGY_METRICS_FILE=$m taskset -c "$cpus" "$bin" --preset "$preset" --data "$dir/$preset" \
			--workers "$cores" --max-iterations "$iters" 2>/dev/null
		r[$cores]=$(rate "$m")
		rm -f "$m"
	done
	printf '%-9s %12s %12s %7s\n' "$preset" "${r[1]}" "${r[2]}" "$(awk -v a="${r[1]}" -v b="${r[2]}" 'BEGIN { printf "%.2f", b / a }')"
done
