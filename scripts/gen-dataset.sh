#!/usr/bin/env bash
# Generate a seeded synthtrain dataset (a thin wrapper around `synthtrain gen`).
#   scripts/gen-dataset.sh PRESET SIZE DIR [SEED] [CLASSES]
#   e.g. scripts/gen-dataset.sh image 256MiB demo/data/image
# Re-running with the same arguments is a no-op (the MANIFEST.json matches).
set -euo pipefail
if [[ $# -lt 3 ]]; then
	sed -n '2,4s/^# \{0,1\}//p' "$0" >&2
	exit 2
fi
preset=$1 size=$2 dir=$3 seed=${4:-1} classes=${5:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SYNTHTRAIN:-$root/bin/synthtrain}
if [[ ! -x $bin ]]; then
	(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/synthtrain)
fi
exec "$bin" gen --preset "$preset" --bytes "$size" --dir "$dir" --seed "$seed" --classes "$classes"
