#!/usr/bin/env bash
# How far the same one-core run of the image reference job moves from one
# run to the next on this host, with and without synergy: the noise floor
# under issue 11's "the two runners agree within 10% per measured cell".
# Each round runs, one after another,
#   raw-local   taskset -c CPU /usr/bin/python3 train_imagenet.py ...
#   raw-docker  docker run --cpuset-cpus CPU synergy/pytorch:<tag> ...
#   syn-local   synergy profile --runner local  --cpus 1 --mem-limits 1GiB
#   syn-docker  synergy profile --runner docker --cpus 1 --mem-limits 1GiB
# (the same script, data, batch, emulated V100 step, thread variables and
# iterations), and then prints every run's samples/s, each kind's mean and
# range over the rounds, and docker/local per round. The raw runs have no
# profiler, no cgroup limits and no samplers: what moves them is the host.
#
#   SYNERGY_MEASURE=1 flock /tmp/synergy-real.lock scripts/pytorch-repeatability.sh [--rounds N] [--out DIR] [--report-only]
# --report-only prints the table from OUT's runs without running.
# Environment: ITERS (300 a run; the first 50 are dropped in raw runs, as
#   the profiler drops its warm-up), CPU (0), BIN (prebuilt synergy; else
#   bin/ after make build). Needs root, Debian's torch and the image
#   (scripts/install-torch.sh, scripts/build-pytorch-image.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 out= run=1
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--report-only) run=0; shift ;;
	*) echo "pytorch-repeatability: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/synergy-repeat-XXXXXX")
iters=${ITERS:-300} cpu=${CPU:-0} bin=${BIN:-$root/bin}
if ((run)); then
[[ -x $bin/synergy ]] || { echo "pytorch-repeatability: no $bin/synergy: run make build or set BIN" >&2; exit 2; }
"$root/scripts/install-torch.sh"
tag=$("$root/scripts/build-pytorch-image.sh" --quiet | tail -1)
mkdir -p "$out/raw" "$out/syn"
[[ -d $out/data ]] || PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$root/models/pytorch/gen_data.py" image \
	--dir "$out/data" --bytes 64MiB --seed 1 >"$out/gen_data.log" 2>&1 || { cat "$out/gen_data.log" >&2; exit 1; }
args=(--emulate-gpu v100 --arch resnet18 -b 32)
threads=(OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1)
for ((r = 1; r <= rounds; r++)); do
	echo "pytorch-repeatability: round $r: $(uptime)"
	f=$out/raw/local-$r.jsonl
	rm -f "$f"
	env "${threads[@]}" SYNERGY_METRICS_FILE="$f" taskset -c "$cpu" /usr/bin/python3 \
		"$root/models/pytorch/train_imagenet.py" --data "$out/data" -j 1 --max-iterations "$iters" --print-freq 0 \
		"${args[@]}" >"${f%.jsonl}.log" 2>&1
	f=$out/raw/docker-$r.jsonl
	rm -f "$f"
	docker run --rm --cpuset-cpus "$cpu" --network none -v "$out/data:/data:ro" -v "$out/raw:/out" \
		$(printf -- '-e %s ' "${threads[@]}") -e "SYNERGY_METRICS_FILE=/out/docker-$r.jsonl" "$tag" \
		/usr/bin/python3 /opt/synergy/train_imagenet.py --data /data -j 1 --max-iterations "$iters" --print-freq 0 \
		"${args[@]}" >"${f%.jsonl}.log" 2>&1
	for runner in local docker; do
		p=$out/syn/$runner-$r.json
		rm -rf "$p" "${p%.json}.logs" "${p%.json}.timeline"
		if [[ $runner == local ]]; then
			job=(/usr/bin/python3 "$root/models/pytorch/train_imagenet.py") flags=(--runner local)
		else
			job=(/usr/bin/python3 /opt/synergy/train_imagenet.py) flags=(--runner docker --docker-img "$tag")
		fi
		"$bin/synergy" profile "${flags[@]}" --strategy grid --cpus 1 --mem-limits 1GiB -b 32 --data "$out/data" \
			--max-iterations "$iters" --point-timeout 180s --stall-breakdown=false --env PYTHONDONTWRITEBYTECODE=1 \
			--out "$p" -- "${job[@]}" --emulate-gpu v100 --arch resnet18 >/dev/null 2>"${p%.json}.log"
	done
done
echo "pytorch-repeatability: done: $(uptime)"
fi
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def raw(path):
    lines = [json.loads(l) for l in open(path) if l.strip()][50:]
    if len(lines) < 2:
        return None
    return sum(x["samples"] for x in lines[1:]) / (lines[-1]["ts"] - lines[0]["ts"])
def syn(path):
    p = json.load(open(path))
    return {("unlimited" if not c["mem_limit_bytes"] else "%dMiB" % (c["mem_limit_bytes"] >> 20)): c["samples_per_s"]
            for c in p["cells"] if c.get("measured") and not c.get("failure")}
runs = {}  # kind -> [samples/s per round]
for r in range(1, rounds + 1):
    for rn in ("local", "docker"):
        f = os.path.join(out, "raw", "%s-%d.jsonl" % (rn, r))
        runs.setdefault("raw-" + rn, []).append(raw(f) if os.path.exists(f) else None)
        f = os.path.join(out, "syn", "%s-%d.json" % (rn, r))
        cells = syn(f) if os.path.exists(f) else {}
        for mem in ("1024MiB", "unlimited"):
            runs.setdefault("syn-%s %s" % (rn, mem), []).append(cells.get(mem))
print("| run | " + " | ".join("round %d" % r for r in range(1, rounds + 1)) + " | mean | max ÷ min |")
print("|---|" + "---:|" * (rounds + 2))
for k, v in runs.items():
    got = [x for x in v if x]
    row = ["%.1f" % x if x else "-" for x in v]
    row += ["%.1f" % statistics.mean(got) if got else "-", "%.2f×" % (max(got) / min(got)) if len(got) > 1 else "-"]
    print("| %s | %s |" % (k, " | ".join(row)))
print()
for what, a, b in (("raw", "raw-local", "raw-docker"), ("synergy 1024MiB", "syn-local 1024MiB", "syn-docker 1024MiB"),
                   ("synergy unlimited", "syn-local unlimited", "syn-docker unlimited")):
    d = ["%+.1f%%" % (100 * (y / x - 1)) if x and y else "-" for x, y in zip(runs[a], runs[b])]
    print("docker/local by round, %s: %s" % (what, ", ".join(d)))
PY
