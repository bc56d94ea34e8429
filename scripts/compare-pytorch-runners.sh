#!/usr/bin/env bash
# Issue 11's "the two runners agree within 10% per measured cell", replayed:
# runs `make demo-pytorch` (scripts/demo-pytorch.sh) under the local and
# the docker runner in turn, ROUNDS times (local, docker, local, docker...),
# each round in OUT/roundN, then prints per cell every run's samples/s with
# the job's own cores and the host's other work while it ran, the docker /
# local ratio of each round and of the rounds' means, the spread of each
# runner over its repeats (what the host's other work alone moves a cell),
# and each run's CPU pace (stats.cpu_speed_mops: the host's own speed).
#   SYNERGY_MEASURE=1 flock /tmp/synergy-real.lock scripts/compare-pytorch-runners.sh [--rounds N] [--out DIR] [--report-only]
# --report-only prints the table from OUT's profiles without running.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The same limits under both runners, so that cells pair (the default axis
# is fitted to each runner's own footprint, which the container's libraries
# raise).
export PYDEMO_MEM=${PYDEMO_MEM:-768MiB,1GiB}
rounds=2 out= run=1
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--report-only) run=0; shift ;;
	*) echo "compare-pytorch-runners: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/synergy-runners-XXXXXX")
if ((run)); then
	for ((r = 1; r <= rounds; r++)); do
		for runner in local docker; do
			mkdir -p "$out/round$r"
			echo "compare-pytorch-runners: round $r $runner: $(uptime)"
			DEMO=$out/round$r "$root/scripts/demo-pytorch.sh" "$runner" >"$out/round$r/$runner.txt" 2>&1
		done
	done
	echo "compare-pytorch-runners: done: $(uptime)"
fi
/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = {}  # (round, runner) -> {(cpus, mem): (samples/s, ci, cores, other)}
for d in sorted(glob.glob(os.path.join(out, "round*"))):
    r = int(os.path.basename(d)[5:])
    for runner in ("local", "docker"):
        f = os.path.join(d, "pytorch-image-%s.json" % runner)
        if not os.path.exists(f):
            continue
        p = json.load(open(f))
        n = p["host"]["logical_cpus"]
        cells = {}
        for c in p["cells"]:
            if c.get("measured") and not c.get("failure"):
                st = c["stats"]
                cores = st.get("cpu_cores_mean", 0)
                other = max(0, st.get("host_cpu_pct_mean", 0) / 100 * n - cores)
                speed = st.get("cpu_speed_mops", 0)
                cells[(c["cpus"], c["mem_limit_bytes"])] = (c["samples_per_s"], c["samples_per_s_ci95"], cores, other, speed)
        runs[(r, runner)] = cells
rounds = sorted({r for r, _ in runs})
keys = sorted({k for v in runs.values() for k in v}, key=lambda k: (k[0], k[1] or 1 << 62))
name = lambda m: "unlimited" if not m else "%dMiB" % (m >> 20)
head = ["cpus", "mem"] + ["%s %d" % (rn, r) for r in rounds for rn in ("local", "docker")]
head += ["docker/local round %d" % r for r in rounds] + ["docker/local of means", "local spread", "docker spread"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
worst = 0
for k in keys:
    row = ["%g" % k[0], name(k[1])]
    for r in rounds:
        for rn in ("local", "docker"):
            v = runs.get((r, rn), {}).get(k)
            row.append("%.1f ±%.1f (%.2f; %.2f; %.0f)" % v if v else "-")
    for r in rounds:
        a, b = runs.get((r, "local"), {}).get(k), runs.get((r, "docker"), {}).get(k)
        row.append("%+.1f%%" % (100 * (b[0] / a[0] - 1)) if a and b else "-")
    vals = {rn: [runs[(r, rn)][k][0] for r in rounds if k in runs.get((r, rn), {})] for rn in ("local", "docker")}
    if vals["local"] and vals["docker"]:
        d = statistics.mean(vals["docker"]) / statistics.mean(vals["local"]) - 1
        worst = max(worst, abs(d))
        row.append("%+.1f%%" % (100 * d))
    else:
        row.append("-")
    for rn in ("local", "docker"):
        v = vals[rn]
        row.append("%.0f%%" % (100 * (max(v) / min(v) - 1)) if len(v) > 1 else "-")
    print("| " + " | ".join(row) + " |")
print("\n(samples/s ±95%% CI (the job's own cores; other work on the host, cores; the CPUs' pace, cpu_speed_mops)); largest |docker/local - 1| of the means: %.1f%%" % (100 * worst))
# The host's own pace per run: a fixed loop timed on each point's CPUs
# (profiler/cpuspeed). Where a run's throughput moved with it, the host
# moved, not the runner.
for (r, rn), cells in sorted(runs.items()):
    sp = [v[4] for v in cells.values() if v[4] > 0]
    if sp:
        print("round %d %s: cpu_speed_mops median %.0f (%.0f-%.0f over its points)" % (r, rn, statistics.median(sp), min(sp), max(sp)))
PY
