#!/usr/bin/env bash
# In-place points (one launch) versus restarted ones on one synthtrain
# preset: the same grid profiled in one launch and with --relaunch,
# then each cell's difference, both wall times, and each cell's CPU pace in
# both (stats.cpu_speed_mops, the host's own speed: docs/cost.md).
#
# Usage: scripts/coststudy/inplace.sh [OUTDIR]
# Environment: PRESET (image), SIZE (96MiB), CPUS (0.5,1,2), MEMS (384MiB),
#   MAX_ITER (60), POINT_TIMEOUT (40s), BIN (prebuilt synergy and synthtrain).
# Needs root; run under flock /tmp/synergy-real.lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/synergy-inplace}
preset=${PRESET:-image} size=${SIZE:-96MiB} cpus=${CPUS:-0.5,1,2} mems=${MEMS:-384MiB}
max_iter=${MAX_ITER:-60} point_timeout=${POINT_TIMEOUT:-40s}
mkdir -p "$out/bin"
if [[ -n ${BIN:-} ]]; then # built already (no build under the measurement lock)
	cp "$BIN/synergy" "$BIN/synthtrain" "$out/bin/"
else
	(cd "$root" && go build -o "$out/bin/synergy" ./cmd/synergy && CGO_ENABLED=0 go build -o "$out/bin/synthtrain" ./cmd/synthtrain)
fi
read -r load _ </proc/loadavg
echo "load average $load at start"
"$out/bin/synthtrain" gen --preset "$preset" --bytes "$size" --dir "$out/data" --seed 1 >/dev/null
for w in true false; do # true: in place (the default); false: --relaunch
	relaunch=()
	[[ $w == true ]] || relaunch=(--relaunch)
	f=$out/windows-$w.json
	rm -rf "$f" "${f%.json}.logs" "${f%.json}.timeline"
	t0=$SECONDS
	"$out/bin/synergy" profile --strategy grid "${relaunch[@]}" --stall-breakdown=false --cpus "$cpus" --mem-limits "$mems" \
		--data "$out/data" --max-iterations "$max_iter" --point-timeout "$point_timeout" --out "$f" \
		-- "$out/bin/synthtrain" --preset "$preset" >/dev/null 2>"${f%.json}.log"
	echo "in place $w: $((SECONDS - t0))s"
done
read -r load _ </proc/loadavg
echo "load average $load at end"
python3 - "$out/windows-true.json" "$out/windows-false.json" <<'PY'
import json, sys
w, r = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda c: (c["cpus"], c["mem_limit_bytes"])
rs = {key(c): c for c in r["cells"] if c["measured"]}
print("windows:", w["cost"]); print("restart:", r["cost"])
print(f"{'cpus':>5} {'mem':>7} {'in-place/s':>11} {'±':>6} {'restart/s':>10} {'±':>6} {'diff%':>7} {'in_place':>8} {'workers':>8} {'pace w/r':>9}")
errs = []
for c in w["cells"]:
    o = rs.get(key(c))
    if not c["measured"] or o is None or c.get("failure") or o.get("failure"):
        continue
    d = 100 * (c["samples_per_s"] - o["samples_per_s"]) / o["samples_per_s"]
    errs.append(abs(d))
    st = c["stats"]
    print(f"{c['cpus']:>5g} {c['mem_limit_bytes']>>20:>5}Mi {c['samples_per_s']:>11.1f} {c['samples_per_s_ci95']:>6.1f} "
          f"{o['samples_per_s']:>10.1f} {o['samples_per_s_ci95']:>6.1f} {d:>7.1f} {str(st.get('in_place', False)):>8} {st['workers']:>4}/{o['stats']['workers']}"
          f" {st.get('cpu_speed_mops', 0):>4.0f}/{o['stats'].get('cpu_speed_mops', 0):<4.0f}")
if errs:
    print(f"mean |diff| {sum(errs)/len(errs):.1f}%  max {max(errs):.1f}%")
PY
