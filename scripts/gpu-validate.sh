#!/usr/bin/env bash
# Validate synergy on a real NVIDIA GPU: profile the reference PyTorch script
# (models/pytorch/train_imagenet.py) with NVML sampling on, and print what to
# record in docs/gpu-validation.md. Needs: root, an NVIDIA driver (NVML),
# python3 with torch and torchvision, Go. Run from the repository root:
#   sudo scripts/gpu-validate.sh [OUT_DIR]
set -euo pipefail
out=${1:-gpu-validation}
mkdir -p "$out"

command -v nvidia-smi >/dev/null || { echo "gpu-validate: no nvidia-smi: no NVIDIA driver here" >&2; exit 2; }
python3 -c 'import torch, torchvision; assert torch.cuda.is_available(), "torch sees no GPU"' \
  || { echo "gpu-validate: python3 needs torch and torchvision with CUDA" >&2; exit 2; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.csv"
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)' | tee "$out/versions.txt"

make build
cores=$(nproc)
data="$out/data-image"
[ -d "$data" ] || bin/synthtrain gen --dir "$data" --bytes "${GPU_VALIDATE_BYTES:-2GiB}" --preset image --seed 1

# The CPU axis up to all cores, memory around the dataset; NVML is required
# (--require-gpu), so a silent fall-back to "none" is an error.
cpus=$(python3 - "$cores" <<'PY'
import sys
n = int(sys.argv[1]); xs = []
c = 1
while c < n: xs.append(c); c *= 2
xs.append(n); print(",".join(map(str, xs)))
PY
)
rm -f "$out/profile.json"
bin/synergy profile --require-gpu --strategy axes --cpus "$cpus" --memory "${GPU_VALIDATE_MEMORY:-16GiB}" \
  --data "$data" -b "${GPU_VALIDATE_BATCH:-256}" --max-iterations 200 --point-timeout 10m \
  --out "$out/profile.json" -- python3 models/pytorch/train_imagenet.py --arch "${GPU_VALIDATE_ARCH:-resnet18}" \
  | tee "$out/matrix.txt"

python3 - "$out/profile.json" <<'PY' | tee "$out/summary.txt"
import json, sys
p = json.load(open(sys.argv[1]))
print("gpu.mode:", p["gpu"]["mode"], p["gpu"].get("devices"))
for c in p["cells"]:
    if not c["measured"] or c.get("failure"):
        continue
    s = c["stats"]
    mem = "unlimited" if c["mem_limit_bytes"] == 0 else "%dMiB" % (c["mem_limit_bytes"] >> 20)
    print("cpus=%-4g mem=%-10s %8.1f samples/s ±%.1f  gpu util %5.1f%%  data wait %4.1f%%  stall %s" % (
        c["cpus"], mem, c["samples_per_s"], c["samples_per_s_ci95"], s.get("gpu_util_pct_mean", 0),
        100 * s["data_wait_fraction"], (c.get("stall") or {}).get("bound", "-")))
PY
echo "gpu-validate: copy $out/{gpu.csv,versions.txt,matrix.txt,summary.txt} into docs/gpu-validation.md"
