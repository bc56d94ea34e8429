#!/usr/bin/env bash
# Runs Gavel's ORIGINAL simulator (an existing checkout of
# stanford-futuredata/gavel that YOU provide; this script neither fetches,
# copies nor builds it) on the physical-cluster traces and/or our synthetic
# inputs, for each policy, and writes per-job results (JSON) plus a summary.
# See docs/gavel-reference.md and scheduler/gavel/testdata/reference/README.md.
#
# Usage:
#   GAVEL_DIR=/path/to/gavel scripts/gavel-reference.sh [-j N] [-o OUTDIR] [physical] [synthetic]
#
# Sets (default: both):
#   physical   Gavel's traces/physical_cluster/{max_min_fairness,minimize_makespan}.trace
#              with its physical_cluster_throughputs.json (read from GAVEL_DIR)
#   synthetic  our scheduler/gavel/testdata/reference/synthetic/{continuous,static}.trace
#              with synthetic/throughputs.json
# Environment:
#   GAVEL_DIR          checkout root (holds scheduler/scripts/drivers/...); required
#   GAVEL_POLICIES     space-separated policies (default: the ten below)
#   GAVEL_SHIM_SOLVER  cvxopt (default, interior point like Gavel's ECOS) or highs
#   PYTHON             interpreter with numpy, scipy, cvxopt, psutil (default /usr/bin/python3;
#                      Debian: apt-get install python3-numpy python3-scipy python3-cvxopt python3-psutil)
# Cluster 8:16:24 (V100:P100:K80), seed 0, 360 s rounds, Gavel's other defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=scheduler/gavel/testdata/reference
jobs=1
out=$ref
while getopts "j:o:h" opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
sets=("$@")
[ ${#sets[@]} -eq 0 ] && sets=(physical synthetic)
: "${GAVEL_DIR:?set GAVEL_DIR to a checkout of stanford-futuredata/gavel}"
driver=$GAVEL_DIR/scheduler/scripts/drivers/simulate_scheduler_with_trace.py
[ -f "$driver" ] || { echo "GAVEL_DIR=$GAVEL_DIR: no $driver" >&2; exit 1; }
PYTHON=${PYTHON:-/usr/bin/python3}
"$PYTHON" -c 'import numpy, scipy, cvxopt, psutil' || {
	echo "$PYTHON lacks numpy/scipy/cvxopt/psutil (Debian: python3-numpy python3-scipy python3-cvxopt python3-psutil)" >&2
	exit 1
}
policies=${GAVEL_POLICIES:-"fifo fifo_perf isolated gandiva max_min_fairness max_min_fairness_perf min_total_duration min_total_duration_perf finish_time_fairness finish_time_fairness_perf"}

tasks=$(mktemp)
trap 'rm -f "$tasks"' EXIT
for set in "${sets[@]}"; do
	case $set in
	physical)
		tput=$GAVEL_DIR/scheduler/physical_cluster_throughputs.json
		facts=""  # Gavel's traces: record times only, never its job list
		traces=("$GAVEL_DIR"/scheduler/traces/physical_cluster/max_min_fairness.trace
			"$GAVEL_DIR"/scheduler/traces/physical_cluster/minimize_makespan.trace)
		;;
	synthetic)
		tput=$ref/synthetic/throughputs.json
		facts=--trace-facts  # our own trace: keep type, scale factor, steps
		traces=("$ref"/synthetic/continuous.trace "$ref"/synthetic/static.trace)
		;;
	*) echo "unknown set $set (want physical or synthetic)" >&2; exit 2 ;;
	esac
	for tr in "${traces[@]}"; do
		dir=$out/$set/$(basename "$tr" .trace)
		mkdir -p "$dir"
		for p in $policies; do
			printf '%s\t%s\t%s\t%s\t%s\n' "$tr" "$tput" "$p" "$dir/$p.json" "$facts" >>"$tasks"
		done
	done
done
echo "gavel-reference: $(wc -l <"$tasks") runs, $jobs at a time, solver ${GAVEL_SHIM_SOLVER:-cvxopt}" >&2
export PYTHON GAVEL_DIR ref
# shellcheck disable=SC2016
tr '\n' '\0' <"$tasks" | xargs -0 -P "$jobs" -I{} bash -c '
	IFS=$'"'"'\t'"'"' read -r tr tput p dest facts <<<"$1"
	"$PYTHON" "$ref/run_gavel.py" --gavel "$GAVEL_DIR" --trace "$tr" --throughputs "$tput" \
		--cluster-spec 8:16:24 --seed 0 --round-s 360 --policy "$p" --out "$dest" $facts' _ {}
for set in "${sets[@]}"; do
	"$PYTHON" "$ref/summarize.py" "$out/$set" >"$out/$set/SUMMARY.md"
	echo "wrote $out/$set/SUMMARY.md" >&2
done
