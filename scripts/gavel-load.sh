#!/usr/bin/env bash
# Gavel's paper shape (issue 14): on a 36:36:36 cluster with Gavel's
# single-GPU continuous workload (its generator, seeds 0-2, mean JCT of jobs
# 4000-4999), the input rate each policy sustains before its mean JCT
# doubles from its low-load value.
#
#   scripts/gavel-load.sh [THROUGHPUTS_JSON] [OUT_DIR]
#
# THROUGHPUTS_JSON defaults to $GAVEL_DIR/scheduler/simulation_throughputs.json.
# Env: LOADS (default 1,2,3,4,4.5,5,5.5,6,6.5,7; the first is the low-load
# reference), SEEDS (0,1,2), POLICIES (max_min_fairness_perf,max_min_fairness;
# max_min_fairness_packed for space sharing, which needs the file's partner
# keys), WORKERS (2), MAX_HOURS (end a run after that many simulated hours:
# a saturated run's queue, and a packing policy's pairs, grow without bound;
# a run so ended counts as over the limit), SYNERGY (a built binary; default:
# go build), WINDOW (the measured jobs, default 4000-4999; a smaller window
# for a quicker, noisier check).
# The rule: a policy sustains rate r when its mean JCT at r is at most twice
# its mean JCT at the lowest rate; the sustainable rate is where the JCT
# curve crosses twice the low-load value, linearly interpolated between
# the two loads around the crossing (the highest load, marked ">=", when it
# never crosses). Simulated time only: figures do not depend on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
tp=${1:-${GAVEL_DIR:?set GAVEL_DIR or give the throughputs file}/scheduler/simulation_throughputs.json}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
bin=${SYNERGY:-}
if [ -z "$bin" ]; then
  bin=$out/synergy
  go build -o "$bin" ./cmd/synergy
fi
"$bin" simulate --gavel-generate continuous --throughputs "$tp" --cluster-spec 36:36:36 \
  --policies "${POLICIES:-max_min_fairness_perf,max_min_fairness}" --loads "${LOADS:-1,2,3,4,4.5,5,5.5,6,6.5,7}" \
  --seed "${SEEDS:-0,1,2}" --workers "${WORKERS:-2}" ${MAX_HOURS:+--gavel-max-hours "$MAX_HOURS"} ${WINDOW:+--window "$WINDOW"} \
  --out "$out/sweep.json" > "$out/table.txt"
python3 - "$out/sweep.json" <<'PY'
import json, sys
from collections import defaultdict
runs = json.load(open(sys.argv[1]))["runs"]
jct = defaultdict(dict)
for r in runs:
    p = r["point"]
    res = r["result"]
    jct[(p["policy"], p["seed"])][p["jobs_per_hour"]] = float("inf") if res.get("truncated") else res["mean_jct_s"] / 3600
def sustained(curve):
    loads = sorted(curve)
    limit = 2 * curve[loads[0]]
    for a, b in zip(loads, loads[1:]):
        if curve[b] > limit:
            if curve[b] == float("inf"):  # truncated: crossed somewhere in (a, b]
                return a, True
            return a + (b - a) * (limit - curve[a]) / (curve[b] - curve[a]), False
    return loads[-1], True
per = defaultdict(list)
print("policy seed: mean JCT h per load | sustained jobs/h")
for (pol, seed), curve in sorted(jct.items()):
    r, open_ended = sustained(curve)
    per[pol].append(r)
    pts = " ".join("%g:%s" % (l, "trunc" if curve[l] == float("inf") else "%.1f" % curve[l]) for l in sorted(curve))
    print("%s seed %d: %s | %s%.2f" % (pol, seed, pts, ">=" if open_ended else "", r))
means = {pol: sum(v) / len(v) for pol, v in per.items()}
for pol, m in sorted(means.items()):
    print("%s: mean sustained %.2f jobs/h over %d seeds" % (pol, m, len(per[pol])))
for a, b in (("max_min_fairness_perf", "max_min_fairness"), ("max_min_fairness_packed", "max_min_fairness_perf")):
    if a in means and b in means:
        print("ratio %s / %s: %.2fx" % (a, b, means[a] / means[b]))
PY
