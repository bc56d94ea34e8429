#!/usr/bin/env python3
"""Benchmark loop for scripts/bench-probe.sh: the same DataLoader loop timed
three ways, so the probe's cost can be set against the contract helper's.

  bench_loop.py --mode plain|helper [--batches N] [--batch N] [--workers N] [--step S] [--data DIR]

plain: an unmodified loop (run it with and without the probe injected);
helper: the loop wrapped in synergy_metrics.SynergyMetrics. The loader reads
an ImageFolder of JPEGs with the standard augmentation when --data is given,
else small in-memory tensors (so the per-batch cost of the instrumentation
is all that is left). --step seconds of sleep stand for the GPU step. Prints
one JSON line: the seconds from the first batch to the last step's end, the
mean per batch, and the main process's CPU time per batch (the first batch,
which starts the workers, is excluded).
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def loader(a):
    if a.data:
        import torchvision
        import torchvision.transforms as T
        ds = torchvision.datasets.ImageFolder(a.data, T.Compose([
            T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])]))
    else:
        ds = torch.utils.data.TensorDataset(torch.randn(4096, 8), torch.zeros(4096, dtype=torch.long))
    return torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                       persistent_workers=a.workers > 0, drop_last=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("plain", "helper"), required=True)
    p.add_argument("--batches", type=int, default=2000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--step", type=float, default=0.0)
    p.add_argument("--data", default="")
    a = p.parse_args()
    dl = loader(a)
    metrics = None
    if a.mode == "helper":
        from synergy_metrics import SynergyMetrics
        metrics = SynergyMetrics()
    done, start = 0, None
    while done < a.batches:
        it = metrics.wrap(dl) if metrics else dl
        for _ in it:
            if start is None:
                start, cpu0 = time.perf_counter(), time.process_time()
            elif a.step:
                time.sleep(a.step)
            done += 1
            if done >= a.batches:
                break
    end, cpu1 = time.perf_counter(), time.process_time()
    if metrics:
        metrics.close()
    print(json.dumps({"mode": a.mode, "batches": done - 1, "seconds": end - start,
                      "per_batch_us": (end - start) / (done - 1) * 1e6,
                      "cpu_per_batch_us": (cpu1 - cpu0) / (done - 1) * 1e6}))


if __name__ == "__main__":
    main()
