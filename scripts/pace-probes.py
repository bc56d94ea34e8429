#!/usr/bin/env python3
# Usage: taskset -c CPU /usr/bin/python3 scripts/pace-probes.py IMAGEFOLDER [SECONDS]
# (docs/pytorch.md, "The same run, again and again"; run alone, under
# flock /tmp/synergy-real.lock).
# Which probe follows the host's JPEG-decode pace? Pinned to one CPU, it
# alternates short slices of: PIL decode of a real JPEG, an ALU loop
# (numpy on a 4 KiB array: L1), a memory-bound gather (numpy take over
# 64 MiB with random indices), and prints per round the rates; then the
# correlation of each probe with the decode rate over rounds.
import io, os, sys, time, glob
import numpy as np
from PIL import Image
dur = float(sys.argv[2]) if len(sys.argv) > 2 else 180
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.jpg")))[:50]
blobs = [open(f, "rb").read() for f in files]
small = np.ones(512)
big = np.random.default_rng(1).random(8 << 20)  # 64 MiB
idx = np.random.default_rng(2).integers(0, big.size, 1 << 18)
def rate(fn, slice_s=0.2):
    n = 0; t0 = time.perf_counter(); c0 = time.thread_time()
    while time.perf_counter() - t0 < slice_s:
        fn(); n += 1
    return n / (time.thread_time() - c0)
i = [0]
def dec():
    im = Image.open(io.BytesIO(blobs[i[0] % len(blobs)])); im.convert("RGB").load(); i[0] += 1
def alu():
    x = small
    for _ in range(50):
        x = x * 1.0000001 + 1e-9
def mem():
    big.take(idx)
rows = []
end = time.time() + dur
while time.time() < end:
    r = (rate(dec), rate(alu), rate(mem), rate(dec))
    rows.append(((r[0] + r[3]) / 2, r[1], r[2]))
    print("%.1f decode %.1f/s alu %.1f/s mem %.1f/s" % (time.time(), rows[-1][0], r[1], r[2]), flush=True)
a = np.array(rows)
for j, name in ((1, "alu"), (2, "mem")):
    print("corr(decode, %s) = %.3f" % (name, np.corrcoef(a[:, 0], a[:, j])[0, 1]))
print("decode range %.1f-%.1f (%.2fx), alu %.2fx, mem %.2fx" % (a[:,0].min(), a[:,0].max(), a[:,0].max()/a[:,0].min(), a[:,1].max()/a[:,1].min(), a[:,2].max()/a[:,2].min()))
