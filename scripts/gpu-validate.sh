#!/usr/bin/env bash
# Validate synergy on a real NVIDIA GPU, in two steps, so the GPU machine
# needs no Go:
#   scripts/gpu-validate.sh build        # here: bin/synergy (cgo, NVML) and bin/synthtrain
#   sudo scripts/gpu-validate.sh run [OUT_DIR]   # on the GPU machine, from the tree with bin/
# run profiles the ImageNet example's shape (models/pytorch/testdata/
# imagenet_ref.py: positional data directory, -a, -j, -b, -p; no synergy
# code) unmodified through an argument template, on the GPU, with the
# default strategy and the default axes (every core count up to the host's,
# the memory axis fitted to the job), NVML required. It runs from the
# caller's own cgroup and moves no process: the cgroup driver (auto) finds
# where the points' cgroups go. It writes OUT_DIR/table.md, the rows for
# docs/gpu-validation.md, and keeps the profile, its logs and timelines.
# Needs on the GPU machine: root, an NVIDIA driver, python3 with torch and
# torchvision built for CUDA (GPU_VALIDATE_PYTHON to name another).
# Environment: GPU_VALIDATE_BYTES (512MiB of JPEGs), GPU_VALIDATE_BATCH (64),
# GPU_VALIDATE_ARCH (resnet18), GPU_VALIDATE_ITERS (100 per point),
# GPU_VALIDATE_TIMEOUT (3m per point), GPU_VALIDATE_BUDGET (8 points).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

usage() { sed -n '2,19s/^# \{0,1\}//p' "$0" >&2; exit 2; }

cmd=${1:-}
[[ -n $cmd ]] || usage
shift

case $cmd in
build)
	make build
	ls -l bin/synergy bin/synthtrain
	exit 0
	;;
run) ;;
*) usage ;;
esac

out=${1:-gpu-validation}
py=${GPU_VALIDATE_PYTHON:-python3}
for b in bin/synergy bin/synthtrain; do
	[[ -x $b ]] || { echo "gpu-validate: no $b: run '$0 build' where Go is, and bring bin/ along" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null || { echo "gpu-validate: no nvidia-smi: no NVIDIA driver here" >&2; exit 2; }
"$py" -c 'import torch, torchvision; assert torch.cuda.is_available(), "torch sees no GPU"' \
	|| { echo "gpu-validate: $py needs torch and torchvision with CUDA" >&2; exit 2; }
mkdir -p "$out"

{
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
	"$py" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)'
	echo "cores $(nproc), memory $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
	echo "cgroup $(stat -fc %T /sys/fs/cgroup), caller's cgroup $(cat /proc/self/cgroup | tr '\n' ' ')"
	echo "PID 1: $(cat /proc/1/comm)"
} | tee "$out/host.txt"

data=$out/data-image
[[ -d $data/train ]] || bin/synthtrain gen --dir "$data/train" --bytes "${GPU_VALIDATE_BYTES:-512MiB}" --preset image --seed 1
[[ -d $data/val ]] || bin/synthtrain gen --dir "$data/val" --bytes 8MiB --preset image --seed 2

rm -rf "$out/profile.json" "$out/profile.logs" "$out/profile.timeline"
t0=$(date +%s)
bin/synergy profile --require-gpu --budget "${GPU_VALIDATE_BUDGET:-8}" \
	--max-iterations "${GPU_VALIDATE_ITERS:-100}" --point-timeout "${GPU_VALIDATE_TIMEOUT:-3m}" \
	-b "${GPU_VALIDATE_BATCH:-64}" --data "$data" --out "$out/profile.json" \
	-- "$py" models/pytorch/testdata/imagenet_ref.py "{data}" -a "${GPU_VALIDATE_ARCH:-resnet18}" \
	-j "{workers}" -b "{batch}" -p 10 --epochs 1000 2>&1 | tee "$out/profile.txt"
echo "wall $(($(date +%s) - t0)) s" | tee -a "$out/profile.txt"
bin/synergy matrix show --gpu "$out/profile.json" | tee "$out/matrix.txt"

"$py" - "$out/profile.json" "$out/host.txt" <<'PY' | tee "$out/table.md"
import json, sys
p = json.load(open(sys.argv[1]))
host = open(sys.argv[2]).read().splitlines()
mib = lambda b: "unlimited" if not b else "%.2f GiB" % (b / 2**30) if b >= 2**30 else "%d MiB" % (b >> 20)
print("Host: " + "; ".join(host))
print("GPU mode: %s %s; cgroups: %s" % (p["gpu"]["mode"], p["gpu"].get("type", ""), p["host"].get("cgroup_placement", p["host"]["cgroup_mode"])))
print("Memory axis from: %s" % p["axes"].get("mem_from", "-"))
so = p.get("step_only")
if so:
    print("GPU ceiling (step-only, %s): %.1f samples/s ±%.1f%s" % (so.get("source", "?"), so.get("samples_per_s", 0),
          so.get("samples_per_s_ci95", 0), " FAILED: " + so["failure"]["message"] if so.get("failure") else ""))
c = p["cost"]
wall = c.get("wall_seconds", 0) or 1
print("Cost: %d launches, %d points, %.0f s wall, of which %.0f s measuring (the rest start-up, warm-up, first passes)" % (
    c.get("launches", 0), c.get("points", 0), c.get("wall_seconds", 0), c.get("measure_seconds", 0)))
# Issue 30's bar: on a GPU server start-up is at most a quarter of the profile's wall time.
print("Start-up: %.1f s, %.0f%% of the wall time (bar: at most 25%%); relaunches: %s" % (
    c.get("startup_seconds", 0), 100 * c.get("startup_seconds", 0) / wall, c.get("relaunches") or "none"))
print()
print("| cpus | memory | samples/s | ±95% | GPU util % (measured iterations) | job SM % | data wait | passes crossed, s between | note |")
print("|---|---|---|---|---|---|---|---|---|")
for cell in p["cells"]:
    if not cell["measured"]:
        continue
    s = cell.get("stats") or {}
    f = cell.get("failure")
    note = ("%s: %s" % (f["class"], f["message"][:120])) if f else s.get("unconverged", "")
    print("| %g | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        cell["cpus"], mib(cell["mem_limit_bytes"]),
        "-" if f else "%.1f" % cell["samples_per_s"], "-" if f else "%.1f" % cell["samples_per_s_ci95"],
        "%.1f (%s)" % (s["gpu_util_pct_mean"], s.get("gpu_stats_over", "?")) if "gpu_util_pct_mean" in s else "-",
        "%.1f" % s["gpu_job_sm_util_pct_mean"] if "gpu_job_sm_util_pct_mean" in s else "-",
        "%.0f%%" % (100 * s["data_wait_fraction"]) if "data_wait_fraction" in s else "-",
        "%d, %.2f" % (s["pass_boundaries"], s.get("epoch_overhead_s", 0)) if s.get("pass_boundaries") else "-",
        note))
for w in p.get("warnings", []):
    print("\nwarning: " + w)
PY
echo "gpu-validate: $out/table.md holds the rows for docs/gpu-validation.md"
