#!/usr/bin/env bash
# Compare --strategy=optimistic (at most 10 measured points, the rest fitted)
# with --strategy=grid (every cell measured: the ground truth) on synthtrain's
# three presets, on this machine, over a 6 CPU × 5 memory grid (4 limits +
# unlimited). For each preset it prints the wall time of each profile, the
# points each measured, the optimistic profile's MAPE and worst cell against
# the grid on the cells it did not measure, and the MinIO formula's MAPE on
# the same cells (`synergy matrix diff --json`); "repeat%" is how far the two
# profiles' measurements of the cells both measured differ: the run-to-run
# noise under any prediction error.
#
# Usage: scripts/compare-strategies.sh [OUTDIR] [PRESET...]
#   OUTDIR defaults to /tmp/synergy-compare; presets to image audio language.
# Environment: CPUS (default 0.25,0.5,0.75,1,1.5,2), MAX_ITER (60),
#   POINT_TIMEOUT (40s), BUDGET (10), and per preset SIZE_<preset>,
#   MEM_<preset>, READ_<preset> (dataset size, memory limits, read limit),
#   BIN (a directory with synergy and synthtrain built already: no build, so
#   the host-wide measurement lock is not held for one), GRID_ONLY=1 (only
#   the grid, to OUTDIR/PRESET-grid.json: two runs give the noise per cell).
# Needs root (cgroups, page-cache eviction) and a quiet machine: other load
# skews CPU points; it takes tens of minutes (a grid is 30 points a preset).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/synergy-compare}
shift || true
presets=("${@:-}")
[[ $# -eq 0 ]] && presets=(image audio language)
cpus=${CPUS:-0.25,0.5,0.75,1,1.5,2}
max_iter=${MAX_ITER:-60}
point_timeout=${POINT_TIMEOUT:-40s}
budget=${BUDGET:-10}

# Datasets and memory limits: four limits around the dataset size, above the
# job's own anonymous memory (image decodes into ~190 MiB at 2 workers).
declare -A size=([image]=${SIZE_image:-96MiB} [audio]=${SIZE_audio:-192MiB} [language]=${SIZE_language:-32MiB})
declare -A mems=([image]=${MEM_image:-224MiB,256MiB,288MiB,384MiB}
	[audio]=${MEM_audio:-48MiB,96MiB,144MiB,256MiB}
	[language]=${MEM_language:-16MiB,24MiB,40MiB,64MiB})
declare -A readlim=([image]=${READ_image:-} [audio]=${READ_audio:-80MB} [language]=${READ_language:-})

mkdir -p "$out"
if [[ -n ${BIN:-} ]]; then
	bin=$BIN
else
	bin=$out/bin
	mkdir -p "$bin"
	(cd "$root" && go build -o "$bin/synergy" ./cmd/synergy && CGO_ENABLED=0 go build -o "$bin/synthtrain" ./cmd/synthtrain)
fi

read -r load _ </proc/loadavg
echo "load average $load at start (CPU points are skewed by other work on these cores)"

num() { # value of the first JSON number field called $1
	grep -m1 "\"$1\":" | sed 's/.*": *//; s/,$//'
}

profile() { # preset strategy -> wall seconds on stdout
	local preset=$1 strategy=$2 f=$out/$1-$2.json
	local args=(--strategy "$strategy" --cpus "$cpus" --mem-limits "${mems[$preset]}"
		--data "$out/data-$preset" --max-iterations "$max_iter" --point-timeout "$point_timeout"
		--out "$f" --json)
	[[ $strategy == optimistic ]] && args+=(--budget "$budget")
	# The grid is the ground truth: a fresh launch per point (--relaunch).
	[[ $strategy == grid ]] && args+=(--relaunch)
	[[ -n ${readlim[$preset]} ]] && args+=(--disk-read-bps "${readlim[$preset]}")
	rm -rf "$f" "$f.logs" "$f.timeline"
	local t0 t1
	t0=$(date +%s.%N)
	if ! "$bin/synergy" profile "${args[@]}" -- "$bin/synthtrain" --preset "$preset" >/dev/null 2>"$out/$preset-$strategy.log"; then
		echo "$preset: synergy profile --strategy $strategy failed: $(tail -n1 "$out/$preset-$strategy.log")" >&2
		return 1
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }'
}

printf '%-9s %7s %7s %6s %6s %9s %11s %9s %22s\n' preset grid_s opt_s grid_n opt_n "opt MAPE%" "MinIO MAPE%" "repeat%" "worst cell (err%)"
for preset in "${presets[@]}"; do
	"$bin/synthtrain" gen --preset "$preset" --bytes "${size[$preset]}" --dir "$out/data-$preset" --seed 1 >/dev/null
	tg=$(profile "$preset" grid) || continue
	if [[ -n ${GRID_ONLY:-} ]]; then
		echo "$preset: grid ${tg}s"
		continue
	fi
	to=$(profile "$preset" optimistic) || continue
	ng=$(num points <"$out/$preset-grid.json")
	no=$(num points <"$out/$preset-optimistic.json")
	"$bin/synergy" matrix diff --json "$out/$preset-optimistic.json" "$out/$preset-grid.json" >"$out/$preset-diff.json"
	mape=$(num mape_pct <"$out/$preset-diff.json")
	base=$(num baseline_mape_pct <"$out/$preset-diff.json")
	worst=$(num worst_err_pct <"$out/$preset-diff.json")
	wc=$(num worst_cpus <"$out/$preset-diff.json")
	wm=$(num worst_mem_limit_bytes <"$out/$preset-diff.json")
	rep=$(num repeat_mape_pct <"$out/$preset-diff.json")
	printf '%-9s %7s %7s %6s %6s %9.2f %11.2f %9.2f %22s\n' "$preset" "$tg" "$to" "$ng" "$no" "$mape" "$base" "$rep" \
		"$(awk -v c="$wc" -v m="$wm" -v e="$worst" 'BEGIN { printf "%g cpu %s: %.1f", c, (m == 0 ? "unl" : sprintf("%dMiB", m / 1048576)), e }')"
done
echo "profiles, diffs and logs in $out; grid vs optimistic per cell: $bin/synergy matrix diff $out/PRESET-optimistic.json $out/PRESET-grid.json"
