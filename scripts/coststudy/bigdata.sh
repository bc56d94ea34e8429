#!/usr/bin/env bash
# A dataset larger than this host's free memory, profiled at real scale
# (docs/cost.md): the default strategy over a CPU x memory grid with the
# memory points' scale chosen automatically, then (FULL=cpus:limit) one
# cell at full size to compare with the scaled profile's cell.
#
# Usage: scripts/coststudy/bigdata.sh OUTDIR           the scaled profile
#        FULL=1:8GiB scripts/coststudy/bigdata.sh OUTDIR   one full-size cell
# Environment: SIZE (32GiB), PRESET (audio), CPUS (0.25,0.5,0.75,1,1.5,2),
#   MEMS (8GiB,12GiB,16GiB,20GiB), READ (100MB), BUDGET (13m, the scaled
#   profile's --time-budget), BIN (prebuilt synergy and synthtrain),
#   DATA (OUTDIR/data; made by `synthtrain gen` when absent).
# Needs root. Run each step under flock /tmp/synergy-real.lock; make the
# dataset first (it takes minutes of disk writes and evicts the page cache).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: bigdata.sh OUTDIR}
preset=${PRESET:-audio} size=${SIZE:-32GiB} cpus=${CPUS:-0.25,0.5,0.75,1,1.5,2}
mems=${MEMS:-8GiB,12GiB,16GiB,20GiB} readlim=${READ:-100MB} budget=${BUDGET:-13m}
data=${DATA:-$out/data}
mkdir -p "$out"
if [[ -n ${BIN:-} ]]; then
	bin=$BIN
else
	bin=$out/bin
	mkdir -p "$bin"
	(cd "$root" && go build -o "$bin/synergy" ./cmd/synergy && CGO_ENABLED=0 go build -o "$bin/synthtrain" ./cmd/synthtrain)
fi
[[ -d $data ]] || "$bin/synthtrain" gen --preset "$preset" --bytes "$size" --dir "$data" --seed 1
echo "uptime at start: $(uptime)"
grep -E 'MemTotal|MemAvailable' /proc/meminfo
t0=$SECONDS
if [[ -z ${FULL:-} ]]; then
	f=$out/scaled.json
	rm -rf "$f" "${f%.json}".{logs,timeline}
	"$bin/synergy" profile --cpus "$cpus" --mem-limits "$mems" --data "$data" --disk-read-bps "$readlim" \
		--time-budget "$budget" --point-timeout 5m --out "$f" -- "$bin/synthtrain" --preset "$preset" 2>"$out/scaled.log" >/dev/null
else
	c=${FULL%%:*} m=${FULL#*:}
	f=$out/full-$c-$m.json
	rm -rf "$f" "${f%.json}".{logs,timeline}
	# Full size (--mem-scale 1): a first pass over the whole dataset at the
	# read limit before the cell is measured. --strategy grid at one CPU
	# count and one limit measures the unlimited cell too (not compared).
	"$bin/synergy" profile --strategy grid --relaunch --stall-breakdown=false --cpus "$c" --mem-limits "$m" \
		--data "$data" --disk-read-bps "$readlim" --mem-scale 1 --point-timeout 15m --out "$f" \
		-- "$bin/synthtrain" --preset "$preset" 2>"${f%.json}.log" >/dev/null
fi
echo "wall $((SECONDS - t0)) s; uptime at end: $(uptime)"
python3 - "$f" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
c = p["cost"]
print("cost:", {k: c.get(k) for k in ("points", "launches", "wall_seconds", "warmup_seconds", "measure_seconds", "stop_reason", "mem_scale", "mem_scale_reason")})
for x in sorted(p["cells"], key=lambda x: (x["mem_limit_bytes"] or 1 << 62, x["cpus"])):
    st = x.get("stats") or {}
    print(f"{x['cpus']:>5g} {x['mem_limit_bytes'] / 2**30:>5.1f}GiB {'measured' if x['measured'] else 'predicted':>9} "
          f"{x['samples_per_s']:>8.1f} ± {x.get('samples_per_s_ci95', 0):>6.1f}  scale {st.get('mem_scale', '-')} "
          f"limit {st.get('scaled_mem_limit_bytes', 0) / 2**30:.2f}GiB  wall {st.get('wall_seconds', 0):.0f}s")
PY
