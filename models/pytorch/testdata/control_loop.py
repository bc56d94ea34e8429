#!/usr/bin/env python3
"""Control channel test script: a shuffled DataLoader over known items.

  control_loop.py OUT.json [--items N] [--batch N] [--workers N] [--epochs N]
      [--seed N] [--step S] [--persistent] [--helper] [--iterable]
      [--no-fork] [--send K:JSON ...]

Each item i is the tensor [i, worker id] (-1 in the main process). The loop
iterates the loader directly (what the injected probe sees) or, with
--helper, through synergy_metrics.SynergyMetrics.wrap. --send K:JSON appends
the JSON line to $SYNERGY_CONTROL_FILE in the body of the K-th batch (from 0,
counted over all epochs), so the job sees it before it fetches batch K+1.
OUT.json records, per batch: its epoch, its items, the worker ids that
loaded them and the loader worker processes alive then (this process's
children, read from /proc).
--iterable uses an IterableDataset of the same items (in order, split among
workers); --no-fork makes a dataset that refuses to load in a worker.
"""

import argparse
import glob
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Items(torch.utils.data.Dataset):
    def __init__(self, n, no_fork=False):
        self.n, self.no_fork = n, no_fork

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if self.no_fork and info is not None:
            raise RuntimeError("this dataset does not load in a worker process")
        return torch.tensor([i, info.id if info is not None else -1])


class IterItems(torch.utils.data.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (-1, 1)
        for i in range(max(wid, 0), self.n, nw):
            yield torch.tensor([i, wid])


def children():
    """This process's live child processes (its loader workers)."""
    out = set()
    for path in glob.glob("/proc/self/task/*/children"):
        try:
            with open(path) as f:
                out.update(int(p) for p in f.read().split())
        except OSError:
            pass
    live = []
    for pid in sorted(out):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    live.append(pid)
        except OSError:
            pass
    return live


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--items", type=int, default=60)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--step", type=float, default=0.0)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--helper", action="store_true")
    p.add_argument("--iterable", action="store_true")
    p.add_argument("--no-fork", dest="no_fork", action="store_true")
    p.add_argument("--send", action="append", default=[], metavar="K:JSON")
    a = p.parse_args()
    sends = {}
    for s in a.send:
        k, line = s.split(":", 1)
        sends.setdefault(int(k), []).append(line)
    if a.iterable:
        loader = torch.utils.data.DataLoader(IterItems(a.items), batch_size=a.batch, num_workers=a.workers)
    else:
        g = torch.Generator()
        g.manual_seed(a.seed)
        loader = torch.utils.data.DataLoader(Items(a.items, a.no_fork), batch_size=a.batch, shuffle=True,
                                             num_workers=a.workers, generator=g,
                                             persistent_workers=a.persistent and a.workers > 0)
    metrics = None
    if a.helper:
        sys.path.insert(0, HERE)
        from synergy_metrics import SynergyMetrics
        metrics = SynergyMetrics()
    batches = []
    k = 0
    for epoch in range(a.epochs):
        for b in (metrics.wrap(loader, epoch=epoch) if metrics else loader):
            batches.append({"epoch": epoch, "items": b[:, 0].tolist(), "wids": sorted(set(b[:, 1].tolist())),
                            "children": len(children()), "threads": torch.get_num_threads(),
                            "omp": os.environ.get("OMP_NUM_THREADS")})
            for line in sends.get(k, []):
                with open(os.environ["SYNERGY_CONTROL_FILE"], "a") as f:
                    f.write(line + "\n")
            k += 1
            if a.step:
                time.sleep(a.step)
    if metrics:
        metrics.close()
    with open(a.out, "w") as f:
        json.dump({"pid": os.getpid(), "batches": batches, "loader_workers": loader.num_workers}, f)


if __name__ == "__main__":
    main()
