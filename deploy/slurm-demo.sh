#!/usr/bin/env bash
# `make demo-slurm`: on the local Slurm cluster (scripts/local-slurm.sh:
# slurmctld and 4 slurmd, 4 x (8 GPUs, 24 CPUs, 500 GB)), show each
# profile's matrix, submit three profiled jobs held with `synergy slurm
# submit`, show what the GPU-proportional share would give them, place them
# with `synergy slurm place` and print squeue and scontrol show job -d for
# each, beside what `synergy schedule` says for the same cluster and queue.
# The profiles are deploy/examples/profiles (synthetic curves, not
# measurements: their gpu.note says so), or PROFILES=DIR with image.json,
# language.json and audio.json from `synergy profile`.
# The demo's jobs are cancelled at the end; a cluster it started is
# stopped again.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
synergy="${SYNERGY:-$root/bin/synergy}"
profiles="${PROFILES:-$root/deploy/examples/profiles}"
[ -x "$synergy" ] || { echo "demo-slurm: $synergy not built (make build)" >&2; exit 1; }

started=0
if ! "$root/scripts/local-slurm.sh" status >/dev/null 2>&1; then
  started=1
fi
eval "$("$root/scripts/local-slurm.sh" start)"

work="$(mktemp -d /tmp/synergy-demo-slurm.XXXXXX)"
ids=()
cleanup() {
  if ((${#ids[@]})); then scancel "${ids[@]}" 2>/dev/null || true; fi
  rm -rf "$work"
  if [ "$started" = 1 ]; then "$root/scripts/local-slurm.sh" stop; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fmt='%.8i %.10j %.8T %.14r %.6N %.5C %.10m %.12b'

if [ -n "$(squeue -h -o %i)" ]; then
  echo "demo-slurm: the cluster of $SLURM_CONF runs other jobs; the demo needs it to itself:" >&2
  squeue >&2
  exit 1
fi

step "nodes (sinfo)"
sinfo -N -o '%N %t %c %m %G'

for p in image language audio; do
  step "profile $p ($profiles/$p.json): its CPU x memory matrix (synergy matrix show)"
  "$synergy" matrix show "$profiles/$p.json"
done

step "submit three profiled jobs held (synergy slurm submit --hold)"
for p in image language audio; do
  id="$("$synergy" slurm submit --profile "$profiles/$p.json" --hold -- \
    --job-name="demo-$p" --output=/dev/null --wrap 'sleep 600')"
  ids+=("$id")
  echo "job $id: $p"
done
squeue -o "$fmt %k"

step "the GPU-proportional alternative (synergy slurm place --strategy fair --dry-run: nothing changed)"
"$synergy" slurm place --strategy fair --dry-run

step "what synergy schedule says for the same cluster and queue (synergy slurm cluster | synergy schedule)"
"$synergy" slurm cluster --used-out "$work/used.json" >"$work/cluster.json"
"$synergy" schedule --cluster "$work/cluster.json" --used "$work/used.json" \
  "$profiles/image.json" "$profiles/language.json" "$profiles/audio.json"

step "place them (synergy slurm place: strategy tune)"
"$synergy" slurm place

for _ in $(seq 50); do
  [ "$(squeue -h -t RUNNING -o %i | wc -l)" -ge 3 ] && break
  sleep 0.2
done
step "squeue"
squeue -o "$fmt"
for id in "${ids[@]}"; do
  step "scontrol show job -d $id"
  scontrol show job -d "$id" | grep -E 'JobId=|JobState=|NumNodes=|TRES=|Nodes=.*CPU_IDs|Comment='
done
