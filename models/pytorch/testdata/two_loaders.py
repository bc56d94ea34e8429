#!/usr/bin/env python3
"""Probe test script: two DataLoaders over in-memory data, no synergy code.

  two_loaders.py OUT.json [--epochs N] [--train N] [--eval N] [--batch N] [--workers N] [--context spawn]

"eval" (shuffle=False, num_workers=0, so the script loads it in-process) is
built and iterated first, then each epoch iterates "train" (shuffle=True,
--workers workers) and "eval" again. Every sample carries the DataLoader
worker info its worker saw (id and num_workers; -1 in the main process),
and OUT.json records the script's pid and, per loader, the batches and samples the script got and
the worker info seen, so a test can compare them with the probe's report.
"""

import argparse
import json
import os
import time

import torch


class Items(torch.utils.data.Dataset):
    def __init__(self, n, cost_s):
        self.n, self.cost_s = n, cost_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if self.cost_s:
            time.sleep(self.cost_s)
        wid, nw = (info.id, info.num_workers) if info is not None else (-1, 0)
        return torch.full((4,), float(i)), torch.tensor([wid, nw])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train", type=int, default=40, help="train samples")
    p.add_argument("--eval", type=int, default=12, help="eval samples")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--step", type=float, default=0.002, help="seconds per training step")
    p.add_argument("--cost", type=float, default=0.0, help="seconds per sample in the loader")
    p.add_argument("--context", default=None, help="multiprocessing start method of the train loader (fork, spawn)")
    a = p.parse_args()
    eval_loader = torch.utils.data.DataLoader(Items(a.eval, 0), batch_size=a.batch, shuffle=False, num_workers=0)
    train_loader = torch.utils.data.DataLoader(Items(a.train, a.cost), a.batch, True, num_workers=a.workers,
                                               persistent_workers=a.workers > 0,
                                               multiprocessing_context=a.context if a.workers > 0 else None)
    seen = {"eval": {"batches": 0, "samples": 0, "workers": []}, "train": {"batches": 0, "samples": 0, "workers": []}}

    def note(name, x, w):
        s = seen[name]
        s["batches"] += 1
        s["samples"] += x.shape[0]
        for pair in w.tolist():
            if pair not in s["workers"]:
                s["workers"].append(pair)

    for x, w in eval_loader:
        note("eval", x, w)
    for _ in range(a.epochs):
        for x, w in train_loader:
            note("train", x, w)
            time.sleep(a.step)
        for x, w in eval_loader:
            note("eval", x, w)
    seen["pid"] = os.getpid()
    with open(a.out, "w") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main()
