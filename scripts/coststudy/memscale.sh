#!/usr/bin/env bash
# Validate --mem-scale on this machine: profile the same memory cells of a
# synthtrain preset at full size and on a sample of the dataset, and print
# each cell's throughput both ways and their difference (docs/cost.md).
#
# Usage: scripts/coststudy/memscale.sh [OUTDIR]
# Environment: PRESET (audio), SIZE (192MiB), MEMS (96MiB,144MiB), SCALE
#   (0.5), CPUS (1), READ (80MB: reads throttled so that misses cost),
#   MAX_ITER (60).
# Needs root (cgroups, page-cache eviction). Run it under
#   flock /tmp/synergy-real.lock scripts/coststudy/memscale.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/synergy-memscale}
preset=${PRESET:-audio} size=${SIZE:-192MiB} mems=${MEMS:-96MiB,144MiB} scale=${SCALE:-0.5}
cpus=${CPUS:-1} readlim=${READ:-80MB} max_iter=${MAX_ITER:-60}
mkdir -p "$out/bin"
(cd "$root" && go build -o "$out/bin/synergy" ./cmd/synergy && CGO_ENABLED=0 go build -o "$out/bin/synthtrain" ./cmd/synthtrain)
read -r load _ </proc/loadavg
echo "load average $load at start"
"$out/bin/synthtrain" gen --preset "$preset" --bytes "$size" --dir "$out/data" --seed 1 >/dev/null
run() { # name extra-args...
	local f=$out/$1.json
	shift
	rm -rf "$f" "${f%.json}.logs" "${f%.json}.timeline"
	local t0=$SECONDS
	"$out/bin/synergy" profile --strategy grid --relaunch --stall-breakdown=false --cpus "$cpus" \
		--mem-limits "$mems" --data "$out/data" --disk-read-bps "$readlim" --max-iterations "$max_iter" \
		--point-timeout 60s --out "$f" "$@" -- "$out/bin/synthtrain" --preset "$preset" >/dev/null 2>"${f%.json}.log"
	echo "$((SECONDS - t0))"
}
tf=$(run full)
ts=$(run scaled --mem-scale "$scale")
echo "full: ${tf}s  scaled (--mem-scale $scale): ${ts}s"
python3 - "$out/full.json" "$out/scaled.json" <<'PY'
import json, sys
full, scaled = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda c: (c["cpus"], c["mem_limit_bytes"])
fs = {key(c): c for c in full["cells"] if c["measured"]}
print(f"{'cpus':>5} {'mem':>8} {'full/s':>9} {'±':>6} {'scaled/s':>9} {'±':>6} {'diff%':>7} {'sample':>7} {'limit':>8} {'pass s full/scaled':>19}")
for c in scaled["cells"]:
    f = fs.get(key(c))
    if not c["measured"] or f is None or c["mem_limit_bytes"] == 0:
        continue
    st, fst = c["stats"], f["stats"]
    d = 100 * (c["samples_per_s"] - f["samples_per_s"]) / f["samples_per_s"]
    print(f"{c['cpus']:>5g} {c['mem_limit_bytes']>>20:>6}Mi {f['samples_per_s']:>9.1f} {f['samples_per_s_ci95']:>6.1f} "
          f"{c['samples_per_s']:>9.1f} {c['samples_per_s_ci95']:>6.1f} {d:>7.1f} {st.get('mem_scale',0):>7.3f} "
          f"{st.get('scaled_mem_limit_bytes',0)>>20:>6}Mi {fst.get('warmup_seconds',0):>9.1f}/{st.get('warmup_seconds',0):<9.1f}")
PY
