#!/usr/bin/env python3
"""A stand-in for a PyTorch training script, standard library only, used by
the end-to-end test that profiles a Python job through synergy_metrics.py
(torch is not installable on the test machines).

It has the shape of train_imagenet.py: the contract's flags from
add_contract_args, an ImageFolder-like dataset (DIR/<class>/<file>) read in
shuffled batches by --workers threads that hash every file (the CPU work a
decode would do), a timed wait for the GPU step (--step-ms), and the loop
wrapped by SynergyMetrics. With --synthetic-data it reads nothing.
"""

import argparse
import concurrent.futures
import hashlib
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from synergy_metrics import SynergyMetrics, add_contract_args  # noqa: E402


def list_files(data):
    paths = []
    for entry in sorted(os.scandir(data), key=lambda e: e.name):
        if entry.is_dir():
            paths += sorted(os.path.join(entry.path, n) for n in os.listdir(entry.path))
    return paths


def read_and_hash(path):
    with open(path, "rb") as f:
        blob = f.read()
    hashlib.sha256(blob).digest()
    return len(blob)


def epoch_batches(paths, batch, seed, pool):
    order = list(paths)
    random.Random(seed).shuffle(order)
    for i in range(0, len(order), batch):
        chunk = order[i:i + batch]
        yield list(pool.map(read_and_hash, chunk))


def synthetic_batches(batch):
    while True:
        yield [0] * batch


def main():
    p = argparse.ArgumentParser(description="stdlib stand-in for a PyTorch training script")
    add_contract_args(p, batch=16)
    p.add_argument("--step-ms", type=float, default=20.0, help="emulated GPU step per batch")
    args = p.parse_args()
    if args.batch < 1 or args.workers < 1:
        p.error("--batch and --workers must be >= 1")
    paths = []
    if not args.synthetic_data:
        if not args.data or not os.path.isdir(args.data):
            p.error("--data: %r is not a directory" % args.data)
        paths = list_files(args.data)
        if not paths:
            p.error("--data: no files under %s/<class>/" % args.data)
    step_s = args.step_ms / 1000.0
    print("stdlib_train: %d files, batch %d, %d workers [%s]" % (
        len(paths), args.batch, args.workers, os.environ.get("SYNERGY_POINT", "")), flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.workers) as pool, SynergyMetrics(emulated=True) as metrics:
        epoch = 0
        while True:
            loader = synthetic_batches(args.batch) if args.synthetic_data else epoch_batches(paths, args.batch, epoch, pool)
            for _ in metrics.wrap(loader, epoch=epoch):
                time.sleep(step_s)
                if metrics.step_done(intended_s=step_s) >= args.max_iterations > 0:
                    return 0
            epoch += 1


if __name__ == "__main__":
    sys.exit(main())
