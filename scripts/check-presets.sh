#!/usr/bin/env bash
# Issue 2's "the numbers are real" checks, through synergy profile on this
# machine (root): image scales with cores, audio needs its data in page cache
# when reads are slow, language is insensitive. Needs a quiet machine: other
# load steals the cores the image preset is measured on.
#   sudo scripts/check-presets.sh [WORK_DIR]
set -euo pipefail
work=${1:-/tmp/synergy-check-presets}
mkdir -p "$work"
make -s build
gen() { [ -d "$work/data-$1" ] || bin/synthtrain gen --dir "$work/data-$1" --bytes "$2" --preset "$1" --seed 1 >/dev/null; }
prof() { local name=$1; shift; rm -rf "$work/$name.json" "$work/$name.logs" "$work/$name.timeline"
  bin/synergy profile --strategy axes --stall-breakdown=false --out "$work/$name.json" "$@" >"$work/$name.txt" 2>&1 \
    || { echo "synergy profile failed; see $work/$name.txt" >&2; exit 1; }; }
cell() { python3 -c 'import json,sys
p=json.load(open(sys.argv[1])); c=float(sys.argv[2]); m=int(sys.argv[3])
print(round([x for x in p["cells"] if x["cpus"]==c and x["mem_limit_bytes"]==m][0]["samples_per_s"], 1))' "$@"; }
fail=0
check() { if python3 -c "import sys; sys.exit(0 if $2 else 1)"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
gen image 64MiB
prof image --cpus 1,2 --mem-limits 1GiB -b 32 --data "$work/data-image" --max-iterations 200 -- bin/synthtrain --preset image
i1=$(cell "$work/image.json" 1 0); i2=$(cell "$work/image.json" 2 0)
check "image: 2 cores $i2 >= 1.6 x 1 core $i1 samples/s" "$i2 >= 1.6 * $i1"

gen audio 256MiB
prof audio --cpus 1 --mem-limits 64MiB,384MiB -b 16 --disk-read-bps 40MB --data "$work/data-audio" --max-iterations 100 -- bin/synthtrain --preset audio
a64=$(cell "$work/audio.json" 1 $((64<<20))); a384=$(cell "$work/audio.json" 1 $((384<<20)))
check "audio (256MiB dataset, reads 40MB/s): 64MiB $a64 at least 25% below 384MiB $a384 samples/s" "$a64 <= 0.75 * $a384"

gen language 32MiB
prof language --cpus 0.5,1,2 --mem-limits 16MiB,64MiB -b 64 --disk-read-bps 40MB --data "$work/data-language" --max-iterations 150 -- bin/synthtrain --preset language
read -r lo hi < <(python3 -c 'import json,sys
v=[c["samples_per_s"] for c in json.load(open(sys.argv[1]))["cells"] if c["measured"]]
print(round(min(v), 1), round(max(v), 1))' "$work/language.json")
check "language: measured cells within 5% ($lo .. $hi samples/s)" "$hi <= 1.05 * $lo"
exit $fail
