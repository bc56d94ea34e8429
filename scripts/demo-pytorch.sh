#!/usr/bin/env bash
# Profile the image reference job (models/pytorch/train_imagenet.py, ResNet-18
# input pipeline, GPU step emulated at a V100's pace) over --cpus 1,2 and the
# default memory axis (fitted to the job's measured footprint) on a small
# generated JPEG dataset, write
# DEMO/pytorch-image-RUNNER.json and print the matrix (`make demo-pytorch`).
#   scripts/demo-pytorch.sh [local|docker]
# Environment: DEMO (demo), PYDEMO_BYTES (64MiB of JPEGs), PYDEMO_MEM (unset:
# the axis the profiler fits to the job's footprint, which is about 255 MiB
# locally and 440-460 MiB in the container, where the framework's libraries
# are charged to it; docs/pytorch.md; e.g. 768MiB,1GiB to give one), PYDEMO_BATCH (32),
# PYDEMO_ITERS (500 iterations a point at most: at 200 a 2-core point measured
# about 11 s and two launches of one runner differed by up to 23% per cell). Installs Debian's torch
# (scripts/install-torch.sh) and, for docker, builds the synergy/pytorch image
# (scripts/build-pytorch-image.sh; cached, about 16 minutes the first time).
# The job is given --epochs 100000: the profile is one launch, and on this
# small dataset the script's default of 90 passes ends it before the last point.
set -euo pipefail
runner=${1:-local}
root=$(cd "$(dirname "$0")/.." && pwd)
demo=${DEMO:-demo}
bytes=${PYDEMO_BYTES:-64MiB}
mem=${PYDEMO_MEM:-}
batch=${PYDEMO_BATCH:-32}
iters=${PYDEMO_ITERS:-500}
case $runner in
local)
	"$root/scripts/install-torch.sh"
	job=(/usr/bin/python3 "$root/models/pytorch/train_imagenet.py")
	flags=(--runner local)
	;;
docker)
	"$root/scripts/install-torch.sh" # gen_data.py runs on the host
	tag=$("$root/scripts/build-pytorch-image.sh" --quiet | tail -1)
	job=(/usr/bin/python3 /opt/synergy/train_imagenet.py)
	flags=(--runner docker --docker-img "$tag")
	;;
*) echo "demo-pytorch: RUNNER=$runner: want local or docker" >&2; exit 2 ;;
esac
mkdir -p "$demo"
PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$root/models/pytorch/gen_data.py" image --dir "$demo/data-image" --bytes "$bytes" --seed 1
out=$demo/pytorch-image-$runner.json
rm -rf "$out" "${out%.json}.logs" "${out%.json}.timeline"
# Both runners alike: no niceness for one of them. A point's job runs in
# its own CPU cgroup (local) or container, which competes for its cores
# with the weight of that cgroup whatever its processes' niceness, so a
# nice -20 for the local runner only changed nothing but the two runners'
# likeness (docs/pytorch.md, "Why the runners differed").
echo "demo-pytorch: $runner: $(uptime)"
memflags=()
[[ -z $mem ]] || memflags=(--mem-limits "$mem") # default: the axis fitted to the job's footprint
"$root/bin/synergy" profile "${flags[@]}" --strategy grid --cpus 1,2 "${memflags[@]}" -b "$batch" \
	--data "$demo/data-image" --max-iterations "$iters" --point-timeout 180s --stall-breakdown=false \
	--env PYTHONDONTWRITEBYTECODE=1 --out "$out" -- "${job[@]}" --emulate-gpu v100 --arch resnet18 --epochs 100000
echo "demo-pytorch: $runner: $(uptime)"
echo "demo-pytorch: profile written to $out"
