#!/usr/bin/env bash
# The real PyTorch image job (models/pytorch/train_imagenet.py, emulated
# V100 step) profiled over 4 CPU counts x 3 memory limits by the default
# strategy (optimistic, a time budget) against the grid restarting the job at
# every point (docs/cost.md).
#
# Usage: scripts/coststudy/pytorch.sh OUTDIR [default|restart|both]
# Environment: CPUS (0.5,1,1.5,2), MEMS (288MiB,320MiB,384MiB), BYTES
#   (96MiB of JPEGs), BUDGET (4m30s), MAX_ITER (30), BIN (prebuilt synergy).
# Needs root and Debian's python3-torch; run each mode under
# flock /tmp/synergy-real.lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: pytorch.sh OUTDIR [default|restart|both]}
mode=${2:-both}
cpus=${CPUS:-0.5,1,1.5,2} mems=${MEMS:-288MiB,320MiB,384MiB} bytes=${BYTES:-96MiB}
budget=${BUDGET:-4m30s} max_iter=${MAX_ITER:-30}
mkdir -p "$out"
bin=${BIN:-$out/bin}
if [[ -z ${BIN:-} ]]; then
	mkdir -p "$bin"
	(cd "$root" && go build -o "$bin/synergy" ./cmd/synergy)
fi
[[ -d $out/data ]] || PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$root/models/pytorch/gen_data.py" image --dir "$out/data" --bytes "$bytes" --seed 1
run() { # name extra-args...
	local f=$out/$1.json
	shift
	rm -rf "$f" "${f%.json}".{logs,timeline}
	echo "$(basename "$f" .json): uptime at start: $(uptime)"
	local t0=$SECONDS
	"$bin/synergy" profile --cpus "$cpus" --mem-limits "$mems" --data "$out/data" --max-iterations "$max_iter" \
		--point-timeout 180s --env PYTHONDONTWRITEBYTECODE=1 --out "$f" "$@" \
		-- /usr/bin/python3 "$root/models/pytorch/train_imagenet.py" --emulate-gpu v100 --arch resnet18 \
		>/dev/null 2>"${f%.json}.log"
	echo "$(basename "$f" .json): wall $((SECONDS - t0)) s; uptime at end: $(uptime)"
}
[[ $mode == default || $mode == both ]] && run default --time-budget "$budget"
[[ $mode == restart || $mode == both ]] && run restart --strategy grid --relaunch
for f in "$out"/default.json "$out"/restart.json; do
	[[ -f $f ]] || continue
	python3 - "$f" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
c = p["cost"]
print(sys.argv[1], {k: c.get(k) for k in ("points", "launches", "wall_seconds", "warmup_seconds", "measure_seconds", "stop_reason", "mem_scale")})
for x in sorted(p["cells"], key=lambda x: (x["mem_limit_bytes"] or 1 << 62, x["cpus"])):
    print(f"  {x['cpus']:>4g} {(x['mem_limit_bytes'] >> 20) or 'unl':>5} {'M' if x['measured'] else 'p'} {x['samples_per_s']:7.1f} ± {x.get('samples_per_s_ci95', 0):5.1f}")
PY
done
