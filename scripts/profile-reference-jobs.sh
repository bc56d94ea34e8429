#!/usr/bin/env bash
# Profile the language and speech reference jobs with `synergy profile` and
# check issue 11's shapes against their matrices:
#   lm:     train_lm.py (LSTM LM, emulated V100 step, batch 20) on 4 MiB of
#           token shards over --cpus 1,2 x one memory limit (+ unlimited):
#           every memory column flat across CPU counts within 10%;
#   speech: train_speech.py (WAV decode + mel features, emulated V100 m5
#           step, batch 32) on 255 MiB of WAV, reads limited to 16 MB/s
#           (remote storage), at 2 cores over two memory limits below the
#           dataset (+ unlimited: all of it cached): throughput falls as the
#           limit drops.
# Prints every cell and each check; exits 1 when a check fails.
#   SYNERGY_MEASURE=1 flock /tmp/synergy-real.lock scripts/profile-reference-jobs.sh [lm] [speech]
# Environment: OUT (a temporary directory), RUNNER (local; or docker, with
# the synergy/pytorch image). Needs bin/synergy and Debian's torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=("$@")
[[ ${#jobs[@]} -gt 0 ]] || jobs=(lm speech)
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/synergy-refjobs-XXXXXX")}
runner=${RUNNER:-local}
py=/usr/bin/python3
mkdir -p "$out"
case $runner in
local) flags=(--runner local) dir=$root/models/pytorch ;;
docker)
	tag=$("$root/scripts/build-pytorch-image.sh" --quiet | tail -1)
	flags=(--runner docker --docker-img "$tag") dir=/opt/synergy
	;;
*) echo "profile-reference-jobs: RUNNER=$runner: want local or docker" >&2; exit 2 ;;
esac
gen() { PYTHONDONTWRITEBYTECODE=1 "$py" "$root/models/pytorch/gen_data.py" "$1" -q --dir "$out/data-$1" --bytes "$2" --seed 1; }
fail=0
for job in "${jobs[@]}"; do
	prof=$out/$job-$runner.json
	rm -rf "$prof" "${prof%.json}.logs" "${prof%.json}.timeline"
	case $job in
	lm)
		# A cold (limited) point is measured from the job's second pass (its
		# epoch 1). A sample is a window of 36 uint16 tokens cut from a few
		# shard files, so a pass over 4 MiB is about 58,000 samples, 2,900
		# iterations at batch 20 (about 50 s at this job's 1,100 samples/s);
		# over 64 MiB it would be 46,600 iterations, 14 minutes per point.
		# The profiler's own guess of a pass (one sample per file) cannot see
		# that, so --max-iterations covers the pass and the window after it.
		gen text 4MiB
		args=(--strategy grid --cpus 1,2 --mem-limits 512MiB -b 20 --data "$out/data-text" --max-iterations 4000 --point-timeout 300s)
		cmd=("$py" "$dir/train_lm.py" --emulate-gpu v100)
		;;
	speech)
		gen speech 255MiB
		args=(--strategy grid --cpus 2 --mem-limits 256MiB,320MiB -b 32 --data "$out/data-speech" --disk-read-bps 16MB
			--max-iterations 150 --point-timeout 300s)
		cmd=("$py" "$dir/train_speech.py" --emulate-gpu v100)
		;;
	*) echo "profile-reference-jobs: job $job: want lm or speech" >&2; exit 2 ;;
	esac
	echo "profile-reference-jobs: $job ($runner): $(uptime)"
	"$root/bin/synergy" profile "${flags[@]}" "${args[@]}" --stall-breakdown=false --env PYTHONDONTWRITEBYTECODE=1 \
		--out "$prof" -- "${cmd[@]}" >"$out/$job-$runner.txt" 2>&1 ||
		{ echo "profile-reference-jobs: FAIL: synergy profile exited $? ($out/$job-$runner.txt)" >&2; fail=1; }
	echo "profile-reference-jobs: $job ($runner): $(uptime)"
	"$py" - "$prof" "$job" <<'PY' || fail=1
import json, sys
p, job = json.load(open(sys.argv[1])), sys.argv[2]
cells = [c for c in p["cells"] if c.get("measured") and not c.get("failure")]
def name(m): return "unlimited" if not m else "%dMiB" % (m >> 20)
for c in sorted(cells, key=lambda c: (c["cpus"], c["mem_limit_bytes"] or float("inf"))):
    st = c.get("stats") or {}
    print("  %s cpus=%g mem=%s: %.1f ±%.1f samples/s, data wait %.0f%%" % (job, c["cpus"], name(c["mem_limit_bytes"]),
        c["samples_per_s"], c["samples_per_s_ci95"], 100 * st.get("data_wait_fraction", 0)))
print("  %s: footprint %.0f MiB" % (job, p["job"].get("footprint_bytes", 0) / 2**20))
bad = []
if len(cells) != len(p["cells"]):
    bad.append("%d of %d cells measured" % (len(cells), len(p["cells"])))
by = {}
for c in cells:
    by.setdefault(c["mem_limit_bytes"], []).append(c)
if job == "lm":
    for m, cs in by.items():
        v = [c["samples_per_s"] for c in cs]
        spread = max(v) / min(v) - 1
        print("  lm mem=%s: max / min over CPU counts = %.3f" % (name(m), 1 + spread))
        if spread > 0.10:
            bad.append("mem=%s: %.1f%% apart across CPU counts, want within 10%%" % (name(m), 100 * spread))
else:
    order = sorted(by, key=lambda m: m or float("inf"))  # lowest limit first, unlimited last
    v = [by[m][0]["samples_per_s"] for m in order]
    print("  speech: %s" % " < ".join("%s %.1f" % (name(m), x) for m, x in zip(order, v)))
    if any(a >= b for a, b in zip(v, v[1:])):
        bad.append("throughput does not fall as the limit drops: %s" % v)
for b in bad:
    print("profile-reference-jobs: FAIL: %s: %s" % (job, b), file=sys.stderr)
print("profile-reference-jobs: %s: %s" % (job, "FAIL" if bad else "ok"))
sys.exit(1 if bad else 0)
PY
done
echo "profile-reference-jobs: profiles in $out"
exit $fail
