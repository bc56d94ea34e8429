#!/usr/bin/env python3
"""Reference language-model job (Synergy's "language" class: CPU-light).

A word-level LSTM language model (the shape of Gavel's "LM" job: embedding,
2-layer LSTM, tied-size decoder) trained on token files as
`gen_data.py text` writes them (DIR/meta.json and DIR/tokens-NNNNN.bin of
little-endian uint16 or int32 ids). Each sample is a window of --seq-len + 1
consecutive tokens read from a memory-mapped shard in DataLoader workers, so
the input pipeline costs almost no CPU: its throughput should not depend on
the CPUs it gets, as Synergy's zoo says of lstm, gnmt and transformer.

It follows synergy's job contract (docs/job-contract.md) through
synergy_metrics.py, like train_imagenet.py. Without CUDA, --emulate-gpu NAME
waits the LSTM LM's measured step on that GPU (Gavel's LM figures) instead
of running the model.

  python3 gen_data.py text --dir /tmp/tokens --bytes 64MiB
  python3 train_lm.py --data /tmp/tokens -b 20 --max-iterations 200 --emulate-gpu v100
"""

import argparse
import json
import os
import sys

import reference_loop
from synergy_metrics import add_contract_args, add_emulation_args, default_workers

_DTYPES = {"uint16": "<u2", "int32": "<i4"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_contract_args(p, batch=20, workers=default_workers(), max_iterations=0)
    p.add_argument("--seq-len", dest="seq_len", type=int, default=35, help="tokens per sample (default 35)")
    p.add_argument("--epochs", type=int, default=40, help="passes over the data (default 40)")
    p.add_argument("--emsize", type=int, default=200, help="embedding size (default 200)")
    p.add_argument("--nhid", type=int, default=200, help="LSTM hidden units (default 200)")
    p.add_argument("--nlayers", type=int, default=2, help="LSTM layers (default 2)")
    p.add_argument("--lr", type=float, default=1.0, help="SGD learning rate (default 1.0)")
    p.add_argument("--clip", type=float, default=0.25, help="gradient norm clip (default 0.25)")
    p.add_argument("--print-freq", type=int, default=100, help="log every N iterations (0: never)")
    p.add_argument("--device", default="", help="cuda, cuda:N or cpu (default: cuda when available)")
    add_emulation_args(p, model="lstm")
    reference_loop.add_checkpoint_args(p)
    args = p.parse_args(argv)
    reference_loop.check_common(p, args)
    if args.seq_len < 1:
        p.error("--seq-len: must be >= 1, got %d" % args.seq_len)
    if not args.synthetic_data:
        if not args.data:
            p.error("--data: required (a directory of token files), or give --synthetic-data")
        meta = os.path.join(args.data, "meta.json")
        if not os.path.isfile(meta):
            p.error("--data: %s has no meta.json (write one with gen_data.py text)" % args.data)
    return args


def read_meta(data):
    """The token directory's meta.json and its shards, checked."""
    path = os.path.join(data, "meta.json")
    with open(path) as f:
        meta = json.load(f)
    dtype = _DTYPES.get(meta.get("dtype"))
    if dtype is None or int(meta.get("vocab_size", 0)) < 2:
        sys.exit("train_lm: %s: dtype must be one of %s and vocab_size >= 2, got %r" % (
            path, ", ".join(sorted(_DTYPES)), meta))
    shards = sorted(os.path.join(data, n) for n in os.listdir(data) if n.startswith("tokens-") and n.endswith(".bin"))
    if not shards:
        sys.exit("train_lm: --data: no tokens-*.bin under %s" % data)
    return int(meta["vocab_size"]), dtype, shards


class TokenWindows:
    """A map-style dataset of (input, target) windows of seq_len tokens cut
    from token shards; each worker maps the shards itself on first use."""

    def __init__(self, shards, dtype, seq_len):
        import numpy as np
        self.shards, self.dtype, self.seq_len = shards, dtype, seq_len
        width = np.dtype(dtype).itemsize
        self.per_shard = [os.path.getsize(s) // width // (seq_len + 1) for s in shards]
        self.starts = np.cumsum([0] + self.per_shard)
        self._maps = None

    def __len__(self):
        return int(self.starts[-1])

    def __getitem__(self, i):
        import numpy as np
        import torch
        if self._maps is None:
            self._maps = [np.memmap(s, dtype=self.dtype, mode="r") for s in self.shards]
        k = int(np.searchsorted(self.starts, i, side="right") - 1)
        off = (i - int(self.starts[k])) * (self.seq_len + 1)
        w = torch.from_numpy(np.array(self._maps[k][off:off + self.seq_len + 1], dtype=np.int64))
        return w[:-1], w[1:]

    def __getstate__(self):  # workers map the files themselves
        d = dict(self.__dict__)
        d["_maps"] = None
        return d


def build_loader(args, torch):
    if args.synthetic_data:
        vocab = 10000
        x = torch.randint(0, vocab, (args.batch, args.seq_len))

        class Repeat:
            def __iter__(self):
                while True:
                    yield x, x

        return Repeat(), vocab
    vocab, dtype, shards = read_meta(args.data)
    ds = TokenWindows(shards, dtype, args.seq_len)
    if len(ds) == 0:
        sys.exit("train_lm: --data: the shards under %s hold less than one window of %d tokens" % (args.data, args.seq_len + 1))
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         drop_last=True, persistent_workers=args.workers > 0)
    return loader, vocab


def main(argv=None):
    args = parse_args(argv)
    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    step = reference_loop.resolve_step("train_lm", args, cuda, "lstm")
    loader, vocab = build_loader(args, torch)
    reference_loop.banner("train_lm", "%d-layer LSTM LM" % args.nlayers, args, step, device, torch.get_num_threads(),
                          ", vocabulary %d, %d tokens per sample" % (vocab, args.seq_len))
    if step:
        return reference_loop.run(args, loader, step=step)

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(vocab, args.emsize)
            self.rnn = torch.nn.LSTM(args.emsize, args.nhid, args.nlayers, batch_first=True)
            self.dec = torch.nn.Linear(args.nhid, vocab)

        def forward(self, x):
            out, _ = self.rnn(self.emb(x))
            return self.dec(out)

    model = LM().to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    model.train()

    def real_step(batch):
        x, y = (t.to(device, non_blocking=True) for t in batch)
        loss = criterion(model(x).reshape(-1, vocab), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        if cuda:
            torch.cuda.synchronize(device)
        return loss

    return reference_loop.run(args, loader, real_step=real_step, state={"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    sys.exit(main())
