#!/usr/bin/env bash
# One launch per profile against a profile that restarts the job for every
# point, side by side in one run (docs/cost.md, "One launch"): the default
# profile of one job made by a baseline synergy (BASE, e.g. the commit
# before one launch; its default restarts every point) and by this tree's,
# alternated REPEAT times each (B N B N ...). Prints each profile's wall
# time, launches and start-up, then every cell both measured: the two
# means, their difference, and the run's own repeat noise of that cell (the
# larger spread between repeats of the same binary).
#
# Usage: scripts/compare-one-launch.sh OUTDIR JOB
#   JOB: pytorch (models/pytorch/train_imagenet.py, ResNet-18 pipeline, a
#        V100's step emulated), image or audio (synthtrain's presets).
# Environment: BASE (a commit; default: HEAD's parent of the one-launch
#   commit, fc1a746^), REPEAT (2), CPUS (0.5,1,2), EXTRA (more profile
#   flags for both). Needs root; builds both binaries before measuring.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: compare-one-launch.sh OUTDIR JOB}
job=${2:?usage: compare-one-launch.sh OUTDIR JOB}
base=${BASE:-fc1a746^} repeat=${REPEAT:-2} cpus=${CPUS:-0.5,1,2}
mkdir -p "$out/bin-base" "$out/bin-new"
if [[ ! -x $out/bin-base/synergy ]]; then
	wt=$(mktemp -d)
	git -C "$root" worktree add -q --detach "$wt" "$base"
	(cd "$wt" && go build -o "$out/bin-base/synergy" ./cmd/synergy)
	git -C "$root" worktree remove --force "$wt"
fi
(cd "$root" && go build -o "$out/bin-new/synergy" ./cmd/synergy && CGO_ENABLED=0 go build -o "$out/bin-new/synthtrain" ./cmd/synthtrain)
case $job in
pytorch)
	"$root/scripts/install-torch.sh" >/dev/null
	[[ -d $out/data-pytorch ]] || PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$root/models/pytorch/gen_data.py" image --dir "$out/data-pytorch" --bytes 64MiB --seed 1 >/dev/null
	data=$out/data-pytorch
	flags=(-b 32 --env PYTHONDONTWRITEBYTECODE=1)
	cmd=(/usr/bin/python3 "$root/models/pytorch/train_imagenet.py" --emulate-gpu v100 --arch resnet18 --epochs 100000)
	;;
image | audio)
	[[ -d $out/data-$job ]] || "$out/bin-new/synthtrain" gen --preset "$job" --bytes 96MiB --dir "$out/data-$job" --seed 1 >/dev/null
	data=$out/data-$job
	flags=()
	cmd=("$out/bin-new/synthtrain" --preset "$job")
	;;
*) echo "compare-one-launch: JOB=$job: want pytorch, image or audio" >&2; exit 2 ;;
esac
read -r load _ </proc/loadavg
echo "$job: load average $load at start; base $(git -C "$root" rev-parse --short "$base"), new $(git -C "$root" rev-parse --short HEAD)"
for i in $(seq 1 "$repeat"); do
	for side in base new; do
		f=$out/$job-$side-$i.json
		rm -rf "$f" "${f%.json}.logs" "${f%.json}.timeline"
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		"$out/bin-$side/synergy" profile --cpus "$cpus" --data "$data" "${flags[@]}" ${EXTRA:-} --out "$f" \
			-- "${cmd[@]}" >/dev/null 2>"${f%.json}.log" || { echo "$side $i failed: $(tail -3 "${f%.json}.log")"; exit 1; }
		echo "$side $i: $(echo "$(date +%s.%N) - $t0" | bc) s"
	done
done
read -r load _ </proc/loadavg
echo "$job: load average $load at end"
python3 - "$out" "$job" "$repeat" <<'PY'
import json, sys, statistics as st
out, job, rep = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = {side: [json.load(open(f"{out}/{job}-{side}-{i}.json")) for i in range(1, rep + 1)] for side in ("base", "new")}
for side, ps in runs.items():
    for i, p in enumerate(ps, 1):
        c = p["cost"]
        print(f"{side} {i}: wall {c['wall_seconds']:.1f} s, {c['points']} points, {c.get('launches', 0)} launches, "
              f"start-up {c.get('startup_seconds', 0):.1f} s, relaunches {c.get('relaunches', [])}")
wb = st.mean(p["cost"]["wall_seconds"] for p in runs["base"])
wn = st.mean(p["cost"]["wall_seconds"] for p in runs["new"])
print(f"wall: base {wb:.1f} s, new {wn:.1f} s: new/base {wn / wb:.2f}")
key = lambda c: (c["cpus"], c["mem_limit_bytes"])
def cells(p):
    return {key(c): c["samples_per_s"] for c in p["cells"] if c["measured"] and not c.get("failure")}
per = {side: [cells(p) for p in ps] for side, ps in runs.items()}
common = set.intersection(*(set(m) for ms in per.values() for m in ms))
print(f"{'cpus':>5} {'mem':>8} {'base/s':>8} {'new/s':>8} {'diff%':>7} {'noise%':>7}  within")
worst = []
for k in sorted(common):
    b = [m[k] for m in per["base"]]; n = [m[k] for m in per["new"]]
    mb, mn = st.mean(b), st.mean(n)
    noise = max(100 * (max(b) - min(b)) / mb, 100 * (max(n) - min(n)) / mn)
    d = 100 * (mn - mb) / mb
    worst.append((abs(d), noise))
    mem = "unlim" if k[1] == 0 else f"{k[1] >> 20}Mi"
    print(f"{k[0]:>5g} {mem:>8} {mb:>8.1f} {mn:>8.1f} {d:>7.1f} {noise:>7.1f}  {'yes' if abs(d) <= noise else 'NO'}")
if worst:
    print(f"cells {len(worst)}: within the noise {sum(d <= n for d, n in worst)}; mean |diff| {st.mean(d for d, _ in worst):.1f}%, mean noise {st.mean(n for _, n in worst):.1f}%")
PY
