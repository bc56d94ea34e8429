"""Write synergy's metrics stream from any training loop (standard library only).

`synergy profile` runs a training script once per (CPUs, memory) point and reads
one JSON line per iteration from the file named by $SYNERGY_METRICS_FILE
(docs/job-contract.md). This module writes those lines for a PyTorch-style
loop: wrap the DataLoader and it times how long each ``next()`` blocked (the
data wait) and the loop body that followed (the step)::

    from synergy_metrics import SynergyMetrics, add_contract_args

    parser = argparse.ArgumentParser()
    add_contract_args(parser, batch=256)
    args = parser.parse_args()
    with SynergyMetrics() as metrics:
        for epoch in range(epochs):
            for images, target in metrics.wrap(loader, epoch=epoch):
                loss = criterion(model(images.cuda()), target.cuda())
                optimizer.zero_grad(); loss.backward(); optimizer.step()
                torch.cuda.synchronize()     # the step ends when the GPU is done
                if metrics.step_done() >= args.max_iterations:
                    sys.exit(0)

The step of an iteration ends at ``step_done()`` if the body calls it, else
when the loop asks for the next batch (or leaves the loop). CUDA work is
asynchronous: synchronise (or call ``loss.item()``) before the step ends, or
the GPU's time is counted as the next iteration's data wait.

When $SYNERGY_METRICS_FILE is unset every call is a cheap no-op, so the
script runs unchanged outside the profiler. Each line goes to the file in a
single ``write`` on a descriptor opened with O_APPEND, so a reader never
sees half a line unless the job dies mid-write, which the profiler ignores.
"""

import json
import os
import time

__all__ = ["SynergyMetrics", "add_contract_args", "default_workers", "batch_size", "ENV_METRICS_FILE", "ENV_POINT"]

ENV_METRICS_FILE = "SYNERGY_METRICS_FILE"
ENV_POINT = "SYNERGY_POINT"


def default_workers():
    """Loader workers for the CPUs this process may run on (the profiler's
    cpuset): len(sched_getaffinity) where the platform has it."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def batch_size(batch):
    """Samples in a batch as a DataLoader yields it: for a tuple or list whose
    first element is a tensor or a collection (``(images, labels)``), that
    element's; for a dict, its first value's; else the leading dimension
    (``.shape[0]``) or ``len()``. Returns None when it cannot tell."""
    if isinstance(batch, dict):
        return batch_size(next(iter(batch.values()))) if batch else None
    if isinstance(batch, (tuple, list)) and batch and (
            hasattr(batch[0], "shape") or isinstance(batch[0], (tuple, list, dict))):
        return batch_size(batch[0])
    shape = getattr(batch, "shape", None)
    if shape is not None:
        try:
            return int(shape[0])
        except (TypeError, IndexError):
            return None
    try:
        return len(batch)
    except TypeError:
        return None


def add_contract_args(parser, batch=32, workers=None, max_iterations=0):
    """Add the flags the profiler appends (docs/job-contract.md) to an
    argparse parser: --batch/-b, --workers/-j, --max-iterations (also
    --max_iterations), --data and --synthetic-data. A flag given twice takes
    its last value, so the profiler's appended flags win. --max-iterations 0
    means no cap; --workers defaults to default_workers()."""
    parser.add_argument("-b", "--batch", type=int, default=batch, metavar="N", help="samples per batch (per GPU)")
    parser.add_argument("-j", "--workers", type=int, default=workers if workers is not None else default_workers(),
                        metavar="N", help="DataLoader worker processes")
    parser.add_argument("--max-iterations", "--max_iterations", dest="max_iterations", type=int,
                        default=max_iterations, metavar="N", help="stop with exit 0 after N iterations (0: no cap)")
    parser.add_argument("--data", default=None, metavar="DIR", help="dataset directory (ImageFolder layout)")
    parser.add_argument("--synthetic-data", dest="synthetic_data", action="store_true",
                        help="feed synthetic batches: skip the data path")
    return parser


class SynergyMetrics:
    """Appends one JSON line per training iteration to the metrics file.

    path: the file to append to; None (the default) reads
    $SYNERGY_METRICS_FILE, and when that is unset or empty the object is
    disabled and every method is a no-op. emulated: mark every line as an
    emulated GPU step. clock/wall: the monotonic clock for durations and the
    wall clock for ``ts`` (Unix seconds), injectable for tests.
    """

    def __init__(self, path=None, emulated=False, clock=time.perf_counter, wall=time.time):
        if path is None:
            path = os.environ.get(ENV_METRICS_FILE, "")
        self.path = path or None
        self.point = os.environ.get(ENV_POINT, "")
        self.emulated = bool(emulated)
        self._clock, self._wall = clock, wall
        self._fd = None
        self.iterations = 0  # iterations recorded so far (the next line's "iter")
        self._wraps = 0  # passes started by wrap() without an explicit epoch
        self._open = None  # the iteration whose step is running: dict

    @property
    def enabled(self):
        return self.path is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Record a step still running and close the file."""
        self._finish()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def wrap(self, iterable, epoch=None, samples=None):
        """Iterate over a loader, timing each batch's data wait (the time
        ``next()`` blocked) and its step (until step_done(), or until the
        next batch is asked for or the loop is left).

        epoch: the pass this is, for the metrics' "epoch"; default: how many
        times wrap() was called before without an epoch. samples: a function
        from a batch to its sample count (default: batch_size()).
        """
        if epoch is None:
            epoch = self._wraps
            self._wraps += 1
        count = samples or batch_size
        it = iter(iterable)
        try:
            while True:
                self._finish()
                t0 = self._clock()
                try:
                    batch = next(it)
                except StopIteration:
                    return
                t1 = self._clock()
                n = count(batch)
                self._open = {"samples": int(n) if n is not None else None, "data_wait_s": t1 - t0,
                              "start": t1, "epoch": epoch, "type": type(batch).__name__}
                yield batch
        finally:
            # The loop ended, broke out or raised: its last step is over.
            self._finish()

    def step_done(self, samples=None, intended_s=None):
        """End the running iteration's step now and write its line.
        samples overrides the count taken from the batch; intended_s, for an
        emulated step, is the wait that was asked for. Returns the number of
        iterations recorded so far, to compare with --max-iterations."""
        if self._open is not None:
            if samples is not None:
                self._open["samples"] = int(samples)
            if intended_s is not None:
                self._open["step_intended_s"] = float(intended_s)
        self._finish()
        return self.iterations

    def record(self, samples, data_wait_s, step_s, epoch=None, intended_s=None):
        """Write one iteration's line from figures the caller measured (for
        loops that do not use wrap). Returns the iterations recorded so far."""
        self._write(int(samples), float(data_wait_s), float(step_s), epoch, intended_s)
        return self.iterations

    def _finish(self):
        o, self._open = self._open, None
        if o is None:
            return
        if o["samples"] is None:
            raise ValueError("synergy_metrics: cannot count the samples in a batch of type %s: "
                             "pass wrap(loader, samples=fn) or step_done(samples=n)" % o["type"])
        self._write(o["samples"], o["data_wait_s"], self._clock() - o["start"], o["epoch"], o.get("step_intended_s"))

    def _write(self, samples, data_wait_s, step_s, epoch, intended_s):
        line = {
            "iter": self.iterations,
            "samples": samples,
            "data_wait_s": max(0.0, data_wait_s),
            "step_s": max(0.0, step_s),
            "ts": self._wall(),
        }
        if epoch is not None:
            line["epoch"] = int(epoch)
        if intended_s is not None:
            line["step_intended_s"] = max(0.0, float(intended_s))
        if self.emulated:
            line["emulated"] = True
        self.iterations += 1
        if self.path is None:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        while data:  # a regular file takes it in one write; loop for safety
            n = os.write(self._fd, data)
            data = data[n:]
