#!/usr/bin/env bash
# Issue 18's check, replayed: the ImageNet reference script's shape
# (models/pytorch/testdata/imagenet_ref.py: positional data directory, -j,
# -b, --epochs; no metrics, no iteration cap), run unmodified from its own
# file through an argument template, the injected probe and its loader-only
# mode (--emulate-gpu v100 --model resnet18), over --cpus 1,2 and two memory
# limits (+ unlimited), under each runner. It fails unless
#   - every cell is measured, from the probe's stream (metrics_stream, each
#     launch's probe report saying stream "probe"), and the profile says
#     emulated, naming the step;
#   - in every memory column the 2-core cell is at least 1.6x the 1-core one;
#   - the script's files are unchanged (sha256 before and after; for docker,
#     the image's copy equals the tree's).
# It prints every cell. Run it under the host lock (it measures throughput):
#   SYNERGY_MEASURE=1 flock /tmp/synergy-real.lock scripts/check-imagenet-ref.sh [local] [docker]
# Environment: OUT (a temporary directory), REF_BYTES (64MiB of JPEGs),
# REF_MEM (768MiB,1GiB), REF_BATCH (32), REF_ITERS (200 iterations per point at most). Needs bin/synergy (make build), Debian's
# torch (scripts/install-torch.sh) and, for docker, the synergy/pytorch image
# (scripts/build-pytorch-image.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runners=("$@")
[[ ${#runners[@]} -gt 0 ]] || runners=(local docker)
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/synergy-imagenet-ref-XXXXXX")}
bytes=${REF_BYTES:-64MiB}
mem=${REF_MEM:-768MiB,1GiB}
batch=${REF_BATCH:-32}
iters=${REF_ITERS:-200}
py=/usr/bin/python3
src=$root/models/pytorch/testdata
mkdir -p "$out"
PYTHONDONTWRITEBYTECODE=1 "$py" "$root/models/pytorch/gen_data.py" image -q --dir "$out/data" --bytes "$bytes" --seed 1
sums() { (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
before=$(sums)
fail=0
for runner in "${runners[@]}"; do
	case $runner in
	local) flags=(--runner local) script=$src/imagenet_ref.py ;;
	docker)
		tag=$("$root/scripts/build-pytorch-image.sh" --quiet | tail -1)
		flags=(--runner docker --docker-img "$tag") script=/opt/synergy/testdata/imagenet_ref.py
		img=$(docker run --rm --entrypoint sha256sum "$tag" "$script" | cut -d' ' -f1)
		if [[ $img != $(sha256sum "$src/imagenet_ref.py" | cut -d' ' -f1) ]]; then
			echo "check-imagenet-ref: FAIL: the image's $script differs from the tree's (rebuild it)" >&2
			fail=1
		fi
		;;
	*) echo "check-imagenet-ref: runner $runner: want local or docker" >&2; exit 2 ;;
	esac
	prof=$out/imagenet-ref-$runner.json
	rm -rf "$prof" "${prof%.json}.logs" "${prof%.json}.timeline"
	echo "check-imagenet-ref: $runner: $(uptime)"
	"$root/bin/synergy" profile "${flags[@]}" --strategy grid --cpus 1,2 --mem-limits "$mem" -b "$batch" \
		--data "$out/data" --max-iterations "$iters" --point-timeout 180s --stall-breakdown=false \
		--emulate-gpu v100 --model resnet18 --env PYTHONDONTWRITEBYTECODE=1 --out "$prof" \
		-- "$py" "$script" '{data}' -j '{workers}' -b '{batch}' --epochs 1000 >"$out/$runner.txt" 2>&1 ||
		{ echo "check-imagenet-ref: FAIL: synergy profile exited $? ($out/$runner.txt)" >&2; fail=1; }
	echo "check-imagenet-ref: $runner: $(uptime)"
	"$py" - "$prof" "$runner" <<'PY' || fail=1
import glob, json, sys
path, runner = sys.argv[1], sys.argv[2]
p = json.load(open(path))
bad = []
cells = {(c["cpus"], c["mem_limit_bytes"]): c for c in p["cells"]}
mems = sorted({m for _, m in cells}, key=lambda m: m or float("inf"))
def name(m): return "unlimited" if not m else "%dMiB" % (m >> 20)
for (cpus, m), c in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] or float("inf"))):
    st = c.get("stats") or {}
    src = st.get("metrics_source")
    print("  %s cpus=%g mem=%s: %.1f ±%.1f samples/s, data wait %.0f%%, from %s%s" % (
        runner, cpus, name(m), c["samples_per_s"], c["samples_per_s_ci95"],
        100 * st.get("data_wait_fraction", 0), src, "" if c.get("measured") and not c.get("failure") else " NOT MEASURED"))
    if not c.get("measured") or c.get("failure"):
        bad.append("cpus=%g mem=%s not measured (%s)" % (cpus, name(m), c.get("failure")))
    elif src != "metrics_stream":
        bad.append("cpus=%g mem=%s measured from %s, not the probe's stream" % (cpus, name(m), src))
for m in mems:
    one, two = cells.get((1, m)), cells.get((2, m))
    if one and two and one["samples_per_s"] > 0:
        r = two["samples_per_s"] / one["samples_per_s"]
        print("  %s mem=%s: 2 cores / 1 core = %.2fx" % (runner, name(m), r))
        if r < 1.6:
            bad.append("mem=%s: 2 cores / 1 core = %.2fx, below 1.6x" % (name(m), r))
reps = glob.glob(path[:-len(".json")] + ".timeline/*.probe.json")
if not reps:
    bad.append("no probe report kept")
for f in reps:
    r = json.load(open(f))
    if r.get("stream") != "probe":
        bad.append("%s: stream %s, not the probe's" % (f, r.get("stream")))
g = p.get("gpu", {})
if g.get("mode") != "emulated" or "resnet18" not in g.get("note", "") or "v100" not in g.get("note", "").lower():
    bad.append("gpu %s: want emulated, naming the V100 ResNet-18 step" % g)
for b in bad:
    print("check-imagenet-ref: FAIL: %s: %s" % (runner, b), file=sys.stderr)
print("check-imagenet-ref: %s: %s" % (runner, "FAIL" if bad else "ok"))
sys.exit(1 if bad else 0)
PY
done
if [[ $(sums) != "$before" ]]; then
	echo "check-imagenet-ref: FAIL: $src changed while profiling" >&2
	fail=1
else
	echo "check-imagenet-ref: the script's files are unchanged (sha256 of $src before and after)"
fi
echo "check-imagenet-ref: profiles in $out"
exit $fail
