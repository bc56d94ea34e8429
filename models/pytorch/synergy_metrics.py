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

__all__ = ["SynergyMetrics", "add_contract_args", "add_emulation_args", "default_workers", "batch_size",
           "GPUStep", "GPU_STEPS", "gpu_step", "emulated_step", "timed_wait", "ENV_METRICS_FILE", "ENV_POINT",
           "ENV_CONTROL_FILE", "ENV_CONTROL_ACK_FILE", "ControlChannel", "control_channel", "parse_control"]

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


# Emulated GPU step (GPEmu's idea): on a machine without a GPU the model's
# forward + backward + optimiser step is replaced by a timed wait of the time
# that step was measured to take on a real GPU, while the data path (files,
# decode, augmentation, workers, page cache) runs for real. The table holds
# measured figures only, each with its source; a batch the source did not
# measure is scaled linearly from the nearest batch it did (a GPU is less
# efficient at small batches, so a scaled-down step is a slight underestimate)
# and the label says so.
#
# Sources (facts read from the public data; no code taken):
#   gpemu:   GPEmu (mengwanguc/gpemu), V100 FP32, forward + backward ms:
#            ResNet-18 b256 66.7 + 197.5; ResNet-50 b64 61.2 + 145.1;
#            AlexNet b256 21.1 + 37.8.
#   synergy: Synergy's model zoo (msr-fiddle/synergy simulator/models/*_1.py;
#            its testbed's GPUs are V100s): iter_time at the fair CPU share
#            divided by the best speed-up over CPUs (the GPU-bound plateau),
#            at the zoo's batch.
#   gavel:   Gavel's scheduler/simulation_throughputs.json (stanford-
#            futuredata/gavel), isolated single-GPU steps/s; step = 1 / that.
#            Its ResNet-18 is CIFAR-10 (32 px), so it is not used for the
#            224 px ImageNet jobs; its LM is a 2-layer LSTM word language
#            model (Wikitext-2), its Transformer a translation model.
def _per_s(steps_per_s):
    return 1.0 / steps_per_s


GPU_STEPS = {
    # (model, gpu): (source, ((batch, step seconds), ...))
    ("resnet18", "v100"): ("gpemu", ((256, 0.0667 + 0.1975),)),
    ("resnet50", "v100"): ("gpemu", ((64, 0.0612 + 0.1451),)),
    ("resnet50", "p100"): ("gavel", ((16, _per_s(9.053)), (32, _per_s(4.888)), (64, _per_s(2.619)), (128, _per_s(1.584)))),
    ("resnet50", "k80"): ("gavel", ((16, _per_s(2.301)), (32, _per_s(1.237)), (64, _per_s(0.619)), (128, _per_s(0.347)))),
    ("alexnet", "v100"): ("gpemu", ((256, 0.0211 + 0.0378),)),
    ("mobilenet", "v100"): ("synergy", ((512, 0.71 / 1.55),)),
    ("shufflenet", "v100"): ("synergy", ((512, 0.615 / 2.89),)),
    ("m5", "v100"): ("synergy", ((512, 0.6 / 2.5),)),
    ("deepspeech", "v100"): ("synergy", ((20, 0.757 / 1.0),)),
    ("gnmt", "v100"): ("synergy", ((128, 0.12 / 1.0),)),
    ("lstm", "v100"): ("gavel", ((5, _per_s(109.167)), (10, _per_s(81.652)), (20, _per_s(64.742)), (40, _per_s(45.237)), (80, _per_s(28.24)))),
    ("lstm", "p100"): ("gavel", ((5, _per_s(90.776)), (10, _per_s(77.085)), (20, _per_s(58.173)), (40, _per_s(35.766)), (80, _per_s(21.158)))),
    ("lstm", "k80"): ("gavel", ((5, _per_s(25.486)), (10, _per_s(23.794)), (20, _per_s(17.142)), (40, _per_s(11.5)), (80, _per_s(6.054)))),
    ("transformer", "v100"): ("gavel", ((16, _per_s(11.064)), (32, _per_s(10.621)), (64, _per_s(8.618)), (128, _per_s(5.446)), (256, _per_s(1.595)))),
    ("transformer", "p100"): ("gavel", ((16, _per_s(9.537)), (32, _per_s(7.869)), (64, _per_s(5.092)), (128, _per_s(3.074)), (256, _per_s(1.678)))),
    ("transformer", "k80"): ("gavel", ((16, _per_s(5.467)), (32, _per_s(3.507)), (64, _per_s(1.752)), (128, _per_s(0.982)), (256, _per_s(0.458)))),
}

# Other spellings of the table's model names (torchvision architectures,
# Synergy's and Gavel's names), after lower-casing and dropping "-", "_", " ".
_MODEL_ALIASES = {
    "res18": "resnet18", "res50": "resnet50", "mobilenetv2": "mobilenet", "mobilenetv3small": "mobilenet",
    "mobilenetv3large": "mobilenet", "shufflenetv2x10": "shufflenet", "shufflenetv2": "shufflenet",
    "lm": "lstm", "languagemodel": "lstm", "wordlm": "lstm",
}


def _norm_model(name):
    k = "".join(c for c in str(name).lower() if c not in "-_ .")
    return _MODEL_ALIASES.get(k, k)


def _norm_gpu(name):
    k = "".join(c for c in str(name).lower() if c not in "-_ ")
    for g in ("v100", "p100", "k80"):
        if g in k:  # "tesla-v100-sxm2-16gb" -> v100
            return g
    return k


class GPUStep:
    """The emulated step of one model on one GPU at one batch size.

    step_s: seconds to wait per iteration; source: where the figure comes
    from ("gpemu", "synergy", "gavel" or "fixed"); label: the one-line
    description the metrics stream carries as "step_source", e.g.
    "gpemu v100 resnet18 batch 256: 264.2 ms, scaled to batch 32".
    """

    def __init__(self, step_s, source, label, gpu=None, model=None, batch=None, ref_batch=None):
        if not step_s > 0:
            raise ValueError("emulated step: %r s is not a positive duration" % step_s)
        self.step_s, self.source, self.label = float(step_s), source, label
        self.gpu, self.model, self.batch, self.ref_batch = gpu, model, batch, ref_batch

    @property
    def scaled(self):
        return self.ref_batch is not None and self.batch != self.ref_batch

    def wait(self):
        """Wait one step; returns the seconds measured (a sleep overshoots,
        more so under CPU load: GPEmu saw 18.2 ms for 15.5 ms asked)."""
        return timed_wait(self.step_s)

    def __repr__(self):
        return "GPUStep(%.6f s, %s)" % (self.step_s, self.label)


def timed_wait(seconds, clock=time.perf_counter, sleep=time.sleep):
    """Sleep for seconds (a blocked wait that uses no CPU, as a GPU step
    leaves the host CPU free) and return the seconds that actually passed."""
    t0 = clock()
    if seconds > 0:
        sleep(seconds)
    return clock() - t0


def gpu_step(model, gpu, batch):
    """The emulated step of model on gpu at batch (samples per step) from
    GPU_STEPS, scaled linearly from the source's nearest measured batch.
    Raises ValueError naming what is known when the pair is not in the
    table."""
    m, g = _norm_model(model), _norm_gpu(gpu)
    entry = GPU_STEPS.get((m, g))
    if entry is None:
        known = sorted("%s@%s" % k for k in GPU_STEPS)
        raise ValueError("no measured step time for model %r on GPU %r; known (model@gpu): %s" % (
            model, gpu, ", ".join(known)))
    if int(batch) < 1:
        raise ValueError("emulated step: batch %r must be >= 1" % batch)
    batch = int(batch)
    source, points = entry
    # Nearest measured batch by ratio, ties to the larger one.
    ref_batch, ref_s = min(points, key=lambda p: (max(p[0], batch) / min(p[0], batch), -p[0]))
    step_s = ref_s * batch / ref_batch
    label = "%s %s %s batch %d: %.1f ms" % (source, g, m, ref_batch, ref_s * 1e3)
    if batch != ref_batch:
        label += ", scaled to batch %d" % batch
    return GPUStep(step_s, source, label, gpu=g, model=m, batch=batch, ref_batch=ref_batch)


def fixed_step(step_s):
    """A fixed emulated step of step_s seconds (no GPU named)."""
    step_s = float(step_s)
    return GPUStep(step_s, "fixed", "fixed %.1f ms" % (step_s * 1e3))


def add_emulation_args(parser, model=None):
    """Add --emulate-gpu NAME, --emulate-step SECONDS and --emulate-model
    NAME to an argparse parser; emulated_step(args, ...) turns them into a
    GPUStep. model: the table's model name the script trains (the default
    of --emulate-model)."""
    gpus = sorted({g for _, g in GPU_STEPS})
    parser.add_argument("--emulate-gpu", dest="emulate_gpu", default="", metavar="NAME",
                        help="without CUDA, replace the model's step with a timed wait of its measured step "
                             "time on this GPU (%s); with CUDA the real step runs" % ", ".join(gpus))
    parser.add_argument("--emulate-step", dest="emulate_step", type=float, default=0.0, metavar="SECONDS",
                        help="without CUDA, replace the step with a fixed wait of this many seconds")
    parser.add_argument("--emulate-model", dest="emulate_model", default=model, metavar="NAME",
                        help="model whose step time --emulate-gpu uses (default: %s)" % (model or "the script's"))
    return parser


def emulated_step(args, batch, cuda=False, model=None):
    """The GPUStep the emulation flags ask for, or None to run the real
    step: when neither --emulate-gpu nor --emulate-step is given, or when
    CUDA is in use (the real GPU step runs). Raises ValueError naming the
    flag on a bad value."""
    gpu = getattr(args, "emulate_gpu", "")
    fixed = getattr(args, "emulate_step", 0.0) or 0.0
    if cuda or (not gpu and not fixed):
        return None
    if fixed < 0:
        raise ValueError("--emulate-step: %r is negative" % fixed)
    if fixed:
        return fixed_step(fixed)
    name = model or getattr(args, "emulate_model", None)
    if not name:
        raise ValueError("--emulate-gpu %s: --emulate-model: the script does not say which model it trains" % gpu)
    try:
        return gpu_step(name, gpu, batch)
    except ValueError as e:
        raise ValueError("--emulate-gpu %s: %s" % (gpu, e)) from None


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

    # How many enabled instances were created in this process: the injected
    # DataLoader probe (probe/synergy_probe.py) reads it to leave a script
    # that writes the stream itself alone.
    enabled_instances = 0

    def __init__(self, path=None, emulated=False, clock=time.perf_counter, wall=time.time, control=None):
        if path is None:
            path = os.environ.get(ENV_METRICS_FILE, "")
        self.path = path or None
        # The control channel wrap() listens to: control_channel() of the
        # environment, only while this object writes the stream (else the
        # injected probe writes it and answers).
        if control is None and self.path is not None:
            control = control_channel()
        self.control = LoaderControl(control, wall=wall) if control is not None else None
        if self.path is not None:
            SynergyMetrics.enabled_instances += 1
        self.point = os.environ.get(ENV_POINT, "")
        self.step_source = None
        # The GPU type the emulated step stands for (GPUStep.gpu, e.g. "v100"):
        # the profile records it as gpu.type.
        self.emulated_gpu = getattr(emulated, "gpu", None) or None
        if isinstance(emulated, str) and emulated:
            self.step_source = emulated
        elif isinstance(getattr(emulated, "label", None), str):  # a GPUStep
            self.step_source = emulated.label
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

        With the control channel ($SYNERGY_CONTROL_FILE and
        $SYNERGY_CONTROL_ACK_FILE, while this object writes the stream) it
        looks for commands between batches: a torch DataLoader's workers
        change mid-pass, and any loop's last batch can be replayed
        (docs/job-contract.md, "The control channel").
        """
        if epoch is None:
            epoch = self._wraps
            self._wraps += 1
        count = samples or batch_size
        ctl = self.control
        if ctl is None:
            it = iter(iterable)
            fetch = next
        else:
            # With the control channel: a torch DataLoader's workers can
            # change mid-pass, and any loop's batch can be replayed.
            it = loader_source(iterable)
            fetch = ctl.fetch
        try:
            while True:
                self._finish()
                if ctl is not None:
                    ctl.poll(it)
                t0 = self._clock()
                try:
                    batch = fetch(it)
                except StopIteration:
                    return
                t1 = self._clock()
                n = count(batch)
                self._open = {"samples": int(n) if n is not None else None, "data_wait_s": t1 - t0,
                              "start": t1, "epoch": epoch, "type": type(batch).__name__}
                if ctl is not None:
                    ctl.delivered(batch, self.iterations, it)
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
            if self.step_source:
                line["step_source"] = self.step_source
            if self.emulated_gpu:
                line["emulated_gpu"] = self.emulated_gpu
        self.iterations += 1
        if self.path is None:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        while data:  # a regular file takes it in one write; loop for safety
            n = os.write(self._fd, data)
            data = data[n:]


# ---- The control channel (docs/job-contract.md, "The control channel") ----
#
# The profiler changes a running job's loader in place, so that one launch
# serves every point of a profile: it appends command lines to
# $SYNERGY_CONTROL_FILE ({"seq":1,"workers":4}, {"seq":2,"replay":true}),
# the job looks for new complete lines between batches of its measured
# loader (a stat; a read only when the file grew) and answers each on
# $SYNERGY_CONTROL_ACK_FILE. SynergyMetrics.wrap() and the injected probe
# both use what follows; one of them answers (ControlChannel.owner). The
# protocol's Go side is jobcontract/control.go.

ENV_CONTROL_FILE = "SYNERGY_CONTROL_FILE"
ENV_CONTROL_ACK_FILE = "SYNERGY_CONTROL_ACK_FILE"
MAX_CONTROL_LINE = 4 << 10  # bytes: jobcontract.MaxControlLine
_CONTROL_KEYS = ("seq", "workers", "replay", "threads")
# The variables a launch sets to the point's cores (profiler.ThreadEnv); a
# "threads" command sets them and torch's intra-op threads in place.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_REGISTRY = "_synergy_control_channels"  # a sys.modules entry every copy of this module shares
_DATALOADER_MODULE = "torch.utils.data.dataloader"


class ControlError(Exception):
    """A command that cannot be applied; its message is the answer's "error"."""


def parse_control(line, last_seq=0):
    """Decode one command line. Returns (command dict, None), or (None,
    error answer dict) for a line that names its seq, or (None, message)
    for one that does not (it cannot be answered)."""
    try:
        d = json.loads(line)
    except ValueError as e:
        return None, "control line %.80r: %s" % (line, e)
    seq = d.get("seq") if isinstance(d, dict) else None
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        return None, "control line %.80r: no positive seq to answer" % (line,)

    def err(msg):
        return None, {"seq": seq, "error": msg}

    if seq <= last_seq:
        return err("seq %d is not above the last one (%d)" % (seq, last_seq))
    unknown = sorted(k for k in d if k not in _CONTROL_KEYS)
    if unknown:
        return err("unknown field %s (known: %s)" % (", ".join(unknown), ", ".join(_CONTROL_KEYS)))
    w = d.get("workers")
    if "workers" in d and (not isinstance(w, int) or isinstance(w, bool) or w < 0):
        return err("workers %r is not an integer >= 0" % (w,))
    if "replay" in d and not isinstance(d["replay"], bool):
        return err("replay %r is not true or false" % (d["replay"],))
    t = d.get("threads")
    if "threads" in d and (not isinstance(t, int) or isinstance(t, bool) or t < 1):
        return err("threads %r is not an integer >= 1" % (t,))
    return d, None


def current_threads():
    """The intra-op threads this process computes with: torch's
    get_num_threads() once torch is imported, else $OMP_NUM_THREADS (what
    torch will take at import); None when neither says."""
    import sys
    torch = sys.modules.get("torch")
    get = getattr(torch, "get_num_threads", None)
    if get is not None:
        try:
            return int(get())
        except Exception:  # a half-imported torch
            pass
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return None
    return n if n >= 1 else None


def set_threads(n):
    """Set this process's threads as a launch at n cores would have them:
    the thread variables (children started from now on inherit them) and
    torch's intra-op threads (torch.set_num_threads, which also sets MKL's).
    Returns the threads in force after (current_threads())."""
    import sys
    for k in THREAD_ENV:
        os.environ[k] = str(n)
    torch = sys.modules.get("torch")
    setter = getattr(torch, "set_num_threads", None)
    if setter is not None:
        setter(int(n))
    return current_threads()


class ControlChannel:
    """The job's end of the control channel: the complete lines appended to
    the control file since the last look, and answers appended to the ack
    file. One per process and pair of files (control_channel()); `owner` is
    the LoaderControl that answers (the probe's or the script's helper's)
    and `hello` the hello once written."""

    def __init__(self, path, ack_path):
        self.path, self.ack_path = path, ack_path
        self.off = 0  # bytes of the control file read
        self._part = b""  # a line still waiting for its newline
        self._discard = False  # dropping an over-long line up to its newline
        self.last_seq = 0
        self.owner = None
        self.hello = None
        self.polls = 0  # looks at the file (stats)
        self.reads = 0  # reads of new bytes

    def lines(self):
        """Complete lines appended since the last call (bytes, stripped);
        a file not there yet holds none."""
        self.polls += 1
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return []
        if size <= self.off:
            return []
        self.reads += 1
        try:
            with open(self.path, "rb") as f:
                f.seek(self.off)
                data = f.read(min(size - self.off, 1 << 20))
        except OSError:
            return []
        self.off += len(data)
        pieces = (self._part + data).split(b"\n")
        self._part = pieces.pop()
        out = []
        for p in pieces:
            if self._discard:
                self._discard = False
                continue
            p = p.strip()
            if p:
                out.append(p)
        if len(self._part) > MAX_CONTROL_LINE:
            _warn("%s: a line longer than %d bytes: dropped" % (ENV_CONTROL_FILE, MAX_CONTROL_LINE))
            self._part, self._discard = b"", True
        return out

    def commands(self):
        """The new commands: (command, None) or (None, error answer)."""
        out = []
        for line in self.lines():
            cmd, err = parse_control(line.decode("utf-8", "replace"), self.last_seq)
            if isinstance(err, str):
                _warn(err)
                continue
            self.last_seq = max(self.last_seq, (cmd or err)["seq"])
            out.append((cmd, err))
        return out

    def answer(self, ack):
        """Append one answer line in a single write."""
        data = (json.dumps(ack, separators=(",", ":")) + "\n").encode()
        try:
            fd = os.open(self.ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as e:
            _warn("%s: cannot answer: %s" % (ENV_CONTROL_ACK_FILE, e))


def _warn(msg):
    import sys
    sys.stderr.write("synergy-control: %s\n" % msg)


def control_channel(env=None):
    """This process's ControlChannel for $SYNERGY_CONTROL_FILE and
    $SYNERGY_CONTROL_ACK_FILE, or None unless both are set. Every copy of
    this module in the process (the probe loads its own) gets the same
    object, so the probe and the script's helper read the file once."""
    import sys
    import types
    env = os.environ if env is None else env
    path, ack = env.get(ENV_CONTROL_FILE, ""), env.get(ENV_CONTROL_ACK_FILE, "")
    if not path or not ack:
        return None
    reg = sys.modules.get(_REGISTRY)
    if reg is None:
        reg = sys.modules[_REGISTRY] = types.ModuleType(_REGISTRY)
        reg.channels = {}
    key = (path, ack, os.getpid())
    if key not in reg.channels:
        reg.channels[key] = ControlChannel(path, ack)
    return reg.channels[key]


class LoaderControl:
    """Applies the channel's commands to one training loop's batches.

    poll(source) between batches reads new commands and applies them
    (workers: source.set_workers; replay: hand the last batch out again);
    fetch(source) gives the next batch; delivered(batch, iteration, source)
    is called as a batch reaches the loop: the first one writes the hello,
    later ones the answers to the commands applied before them. channel may
    be None (no channel: only the probe's replay mode uses it then)."""

    def __init__(self, channel, wall=time.time):
        self.channel = channel
        self._wall = wall
        self.replay = False
        # last is the batch replayed; kept only while replaying (no batch
        # outlives its step otherwise: the job's memory is its own).
        self.last = None
        self._arm = False  # replay asked: it starts with the next batch delivered
        self._pending = []  # (seq, note, workers before) of commands applied, unanswered

    def _owns(self):
        ch = self.channel
        if ch is None:
            return False
        if ch.owner is None:
            ch.owner = self
        return ch.owner is self

    def release(self):
        """Stop answering (the probe stood down for the script's helper)."""
        if self.channel is not None and self.channel.owner is self:
            self.channel.owner = None

    def poll(self, source):
        ch = self.channel
        if ch is None or ch.hello is None or ch.owner is not self:
            return  # it listens from its hello on
        for cmd, err in ch.commands():
            if err is not None:
                ch.answer(err)
                continue
            before, note = source.workers(), None
            threads_before = current_threads()
            if "threads" in cmd:  # first: it cannot fail once the workers changed
                try:
                    set_threads(cmd["threads"])
                except Exception as e:  # torch refused: the job goes on as it was
                    ch.answer({"seq": cmd["seq"], "error": "threads %d: %s: %s" % (cmd["threads"], type(e).__name__, e)})
                    continue
            if "workers" in cmd:
                try:
                    note = source.set_workers(cmd["workers"])
                except ControlError as e:
                    if "threads" in cmd and threads_before:
                        set_threads(threads_before)  # the job goes on exactly as it was
                    ch.answer({"seq": cmd["seq"], "error": "workers %d: %s" % (cmd["workers"], e)})
                    continue
            if "replay" in cmd and cmd["replay"]:
                self._arm = not self.replay
            elif "replay" in cmd:
                self.replay, self._arm, self.last = False, False, None
            self._pending.append((cmd["seq"], note, before if "workers" in cmd else None))

    def fetch(self, source):
        """The next batch: the last one again in replay, else the loader's.
        A loader that fails before the first batch under new workers goes
        back to the workers it had; the command is answered with the error."""
        if self.replay:
            return self.last
        try:
            return source.next()
        except StopIteration:
            raise
        except Exception as e:
            back = [p for p in self._pending if p[2] is not None]
            if not back:
                raise
            seq, _, before = back[-1]
            failed = source.workers()
            try:
                source.set_workers(before)
            except ControlError:
                raise e from None
            self._pending = [p for p in self._pending if p[2] is None]
            for s, _, _ in back:
                self.channel.answer({"seq": s, "error": "workers %d: the loader failed before its first batch "
                                                        "(%s: %s); back to %d workers" % (failed, type(e).__name__, e, before)})
            return self.fetch(source)

    def arm(self):
        """Replay from the next batch delivered on (the probe's replay mode)."""
        self._arm = not self.replay

    def delivered(self, batch, iteration, source):
        if self.channel is None:
            if self._arm:
                self.replay, self._arm, self.last = True, False, batch
            return
        if not self._owns():
            return
        if self._arm:
            self.replay, self._arm, self.last = True, False, batch
        ch = self.channel
        if ch.hello is None:
            ch.hello = {"seq": 0, "workers": source.workers(), "ts": self._wall(), "iter": int(iteration)}
            threads = current_threads()
            if threads:
                ch.hello["threads"] = threads
            if self.replay:
                ch.hello["replay"] = True
            ch.answer(ch.hello)
        if self._pending:
            ts = self._wall()
            for seq, note, _ in self._pending:
                ack = {"seq": seq, "workers": source.workers(), "replay": self.replay, "ts": ts, "iter": int(iteration)}
                threads = current_threads()
                if threads:
                    ack["threads"] = threads
                if note:
                    ack["note"] = note
                ch.answer(ack)
            self._pending = []


class PlainSource:
    """Batches from any iterable: replay works, workers cannot be changed."""

    def __init__(self, iterable):
        self.what = type(iterable).__name__
        self.it = iter(iterable)

    def workers(self):
        return 0

    def next(self):
        return next(self.it)

    def set_workers(self, n):
        raise ControlError("the loop iterates a %s, not a torch DataLoader: its workers cannot be changed" % self.what)


def _dataloader_module(obj):
    import sys
    mod = sys.modules.get(_DATALOADER_MODULE)
    if mod is not None and isinstance(obj, mod.DataLoader):
        return mod
    return None


def record_dispatch(mod):
    """Patch torch's _BaseDataLoaderIter._next_index (once) to remember the
    index batches an iterator sent to its workers and has not yet returned:
    what a change of workers must fetch again. Kept on the iterator as
    _synergy_dispatch = [sampler iterator, batches returned before the
    list's first, list]; a new pass (a new sampler iterator) starts a new
    list, and returned batches are dropped from it as it grows."""
    base = mod._BaseDataLoaderIter
    if getattr(base, "_synergy_records_dispatch", False):
        return
    orig = base._next_index

    def _next_index(self):
        idx = orig(self)
        d = self.__dict__.get("_synergy_dispatch")
        if d is None or d[0] is not self._sampler_iter:
            d = self.__dict__["_synergy_dispatch"] = [self._sampler_iter, 0, []]
        d[2].append(idx)
        if len(d[2]) > 64:
            k = min(self._num_yielded - d[1], len(d[2]))
            if k > 0:
                del d[2][:k]
                d[1] += k
        return idx

    _next_index.__wrapped__ = orig
    base._next_index = _next_index
    base._synergy_records_dispatch = True


def fresh_iter(loader, orig_iter):
    """iter(loader) through orig_iter, except for a loader with persistent
    workers whose iterator a change of workers replaced: its next iterator
    is made afresh, and its workers' base seed is drawn from a private
    generator so that the loader's own generator (the shuffle's) advances
    exactly as it would have without the change."""
    seed = loader.__dict__.pop("_synergy_fresh_seed", None)
    if seed is None or getattr(loader, "_iterator", None) is not None:
        return orig_iter(loader)
    import torch
    gen, private = loader.generator, torch.Generator()
    private.manual_seed(seed)
    loader.generator = private
    try:
        return orig_iter(loader)
    finally:
        loader.generator = gen


class _Remaining:
    """The rest of a pass as a one-shot batch sampler: the batches an old
    iterator dispatched but never returned, then the rest of its sampler
    iterator. `pulled` keeps what came from the latter (to give back if the
    new iterator cannot start)."""

    def __init__(self, head, rest):
        self.head, self.rest, self.pulled = list(head), rest, []

    def empty(self):
        if self.head:
            return False
        try:
            self.head.append(next(self.rest))
        except StopIteration:
            return True
        self.pulled.append(self.head[0])
        return False

    def __iter__(self):
        while self.head:
            yield self.head.pop(0)
        for b in self.rest:
            self.pulled.append(b)
            yield b


class TorchSource:
    """Batches from a torch DataLoader's iterator `it` (the one the training
    loop holds), whose workers can be changed mid-pass: the pass goes on
    from the batch after the last one returned, from a new iterator over the
    same dataset with the new number of workers (`cur`). next_fn fetches
    from a torch iterator (the probe passes torch's own __next__)."""

    def __init__(self, loader, it, next_fn=next):
        self.loader, self.it, self.cur, self.next_fn = loader, it, it, next_fn
        self.mod = _dataloader_module(loader)

    def workers(self):
        return self.cur._num_workers if self.cur is not None else self.loader.num_workers

    def next(self):
        if self.cur is None:
            raise StopIteration
        return self.next_fn(self.cur)

    def _clone(self, n, generator, **over):
        """A plain DataLoader like self.loader with n workers (its
        constructor unpatched: the probe does not list it)."""
        import inspect
        dl = self.mod.DataLoader
        init = getattr(dl.__init__, "__wrapped__", dl.__init__)
        params = inspect.signature(init).parameters
        src = self.loader
        kw = {"dataset": src.dataset, "num_workers": n, "collate_fn": src.collate_fn, "pin_memory": src.pin_memory,
              "timeout": src.timeout, "worker_init_fn": src.worker_init_fn, "generator": generator}
        if n > 0:
            kw["multiprocessing_context"] = src.multiprocessing_context
            if getattr(src, "prefetch_factor", None) is not None:
                kw["prefetch_factor"] = src.prefetch_factor
        for k in ("pin_memory_device", "in_order"):
            if k in params and hasattr(src, k):
                kw[k] = getattr(src, k)
        kw.update(over)
        obj = dl.__new__(dl)
        init(obj, **kw)
        return obj

    def set_workers(self, n):
        """Go on with n workers; returns a note for the answer, or None.
        Raises ControlError, the loader unchanged, when it cannot."""
        import torch
        old, loader = self.cur, self.loader
        if old is None:
            loader.num_workers = n
            return "the pass had ended: the next one starts with %d workers" % n
        if n == old._num_workers:
            return None
        gen = torch.Generator()
        gen.manual_seed(int(getattr(old, "_base_seed", 0)) & 0x7FFFFFFFFFFFFFFF)
        note, rem = None, None
        try:
            if isinstance(loader.dataset, torch.utils.data.IterableDataset):
                new = self._clone(n, gen, batch_size=loader.batch_size, drop_last=loader.drop_last)
                note = "iterable dataset: its pass began again with %d workers (an IterableDataset cannot be resumed)" % n
            else:
                d = old.__dict__.get("_synergy_dispatch")
                if d is not None and d[0] is old._sampler_iter:
                    head = d[2][max(0, old._num_yielded - d[1]):]
                elif old._num_workers == 0:
                    head = []  # in-process: nothing fetched ahead
                else:
                    raise ControlError("the loader's iterator was made before synergy recorded its batches")
                rem = _Remaining(head, old._sampler_iter)
                if rem.empty():
                    new = None
                    note = "the pass had ended: the next one starts with %d workers" % n
                elif loader._auto_collation:
                    new = self._clone(n, gen, batch_sampler=rem)
                else:
                    new = self._clone(n, gen, sampler=rem, batch_size=None)
            new_it = new._get_iterator() if new is not None else None
        except ControlError:
            raise
        except Exception as e:
            if rem is not None and rem.pulled:
                self._give_back(old, rem.pulled)
            raise ControlError("cannot start %d workers: %s: %s" % (n, type(e).__name__, e)) from None
        if new_it is not None and hasattr(old, "_synergy_probe_record"):
            new_it._synergy_probe_record = old._synergy_probe_record
        if hasattr(old, "_shutdown_workers"):
            old._shutdown_workers()
        if loader.persistent_workers and getattr(loader, "_iterator", None) is self.it:
            loader._iterator = None  # its workers are gone: the next pass makes a new one
            loader.__dict__["_synergy_fresh_seed"] = int(getattr(old, "_base_seed", 0)) & 0x7FFFFFFFFFFFFFFF
        loader.num_workers = n
        self.cur, self._clone_loader = new_it, new
        return note

    @staticmethod
    def _give_back(old, pulled):
        """Put batches a failed new iterator took back in front of old's sampler iterator."""
        import itertools
        rest = itertools.chain(pulled, old._sampler_iter)
        d = old.__dict__.get("_synergy_dispatch")
        old._sampler_iter = rest
        if d is not None:
            d[0] = rest


def loader_source(iterable, next_fn=next):
    """A TorchSource for a torch DataLoader (recording its dispatched
    batches from now on), a PlainSource for anything else."""
    mod = _dataloader_module(iterable)
    if mod is None:
        return PlainSource(iterable)
    record_dispatch(mod)
    it = fresh_iter(iterable, type(iterable).__iter__)
    if not isinstance(it, mod._BaseDataLoaderIter):
        src = PlainSource(())
        src.it, src.what = it, type(it).__name__
        return src
    return TorchSource(iterable, it, next_fn)


# ---- Checkpoint and resume (docs/job-contract.md, "Checkpoint and resume") ----
#
# The convention of PyTorch Lightning's Slurm auto-requeue and submitit: on
# SIGUSR1 (sbatch --signal=B:USR1@GRACE; a scheduler's scancel --signal=USR1)
# the job saves its progress at the end of the iteration in progress, asks
# Slurm to requeue it and exits; on its next start it resumes from the
# checkpoint. SIGTERM saves and exits without a requeue. A script registers
# what it must keep in one line:
#
#     ck = checkpointer(model=model, optimizer=optimizer)   # restores them if a checkpoint exists
#     for epoch in range(ck.epoch, epochs):
#         for batch in metrics.wrap(ck.resume_pass(loader, epoch), epoch=epoch):
#             ...the step...
#             ck.step_done(metrics.step_done())   # saves, requeues and exits when signalled

ENV_CHECKPOINT_DIR = "SYNERGY_CHECKPOINT_DIR"
ENV_REQUEUE = "SYNERGY_REQUEUE"
EXIT_PREEMPTED = 3  # the exit status of a job stopped by the signal at an iteration boundary
CHECKPOINT_FILE = "checkpoint.json"
_CHECKPOINT_VERSION = 1
_MAX_CHECKPOINT_JSON = 1 << 20  # bytes: the progress file is small; a bigger one is not ours
REQUEUE_MODES = ("requeue", "hold", "none")

__all__ += ["ENV_CHECKPOINT_DIR", "ENV_REQUEUE", "EXIT_PREEMPTED", "Checkpointer", "checkpointer",
            "checkpoint_dir", "slurm_job_id", "seed_epoch"]


def slurm_job_id(env=None):
    """This Slurm job's id as scontrol takes it (ARRAYJOB_TASK for an array
    task), or "" outside Slurm or for an id that is not digits."""
    env = os.environ if env is None else env
    jid = env.get("SLURM_JOB_ID", "")
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        jid = env["SLURM_ARRAY_JOB_ID"] + "_" + env["SLURM_ARRAY_TASK_ID"]
    if not jid or jid.strip("0123456789_"):
        return ""
    return jid


def checkpoint_dir(env=None):
    """$SYNERGY_CHECKPOINT_DIR, else under Slurm
    $SLURM_SUBMIT_DIR/synergy-checkpoints/JOBID (a requeued job keeps its
    id, so its next start finds it), else "" (no checkpoint)."""
    env = os.environ if env is None else env
    if env.get(ENV_CHECKPOINT_DIR):
        return env[ENV_CHECKPOINT_DIR]
    jid = slurm_job_id(env)
    if not jid:
        return ""
    return os.path.join(env.get("SLURM_SUBMIT_DIR") or ".", "synergy-checkpoints", jid)


def requeue_mode(env=None):
    """$SYNERGY_REQUEUE: "requeue" (the default under Slurm), "hold" or
    "none" (the default outside Slurm). Raises ValueError naming it."""
    env = os.environ if env is None else env
    m = env.get(ENV_REQUEUE, "")
    if m == "":
        return "requeue" if slurm_job_id(env) else "none"
    if m not in REQUEUE_MODES:
        raise ValueError("%s=%r: want one of %s" % (ENV_REQUEUE, m, ", ".join(REQUEUE_MODES)))
    if m != "none" and not slurm_job_id(env):
        raise ValueError("%s=%s needs SLURM_JOB_ID (a Slurm job)" % (ENV_REQUEUE, m))
    return m


def seed_epoch(loader, seed, epoch):
    """Make a torch DataLoader's shuffle of this epoch a function of (seed,
    epoch) alone, so that a resumed run sees the batches the stopped one
    would have: sets its RandomSampler's generator (and the loader's, which
    seeds the workers). Other iterables are left alone."""
    try:
        import torch
    except ImportError:
        return
    g = torch.Generator()
    g.manual_seed(int(seed) * 1000003 + int(epoch))
    sampler = getattr(loader, "sampler", None)
    if sampler is not None and hasattr(sampler, "generator"):
        sampler.generator = g
    if hasattr(loader, "generator"):
        loader.generator = g


class Checkpointer:
    """Saves and restores a training job's progress (iterations, epoch, the
    batches done in that epoch, samples) and the state of the objects
    registered with it (anything with state_dict()/load_state_dict(): a
    model, an optimizer, a scheduler, a GradScaler).

    directory: where to keep it (None: checkpoint_dir() of the environment;
    "": no checkpoint, so a stop loses the run's work). every: save every so
    many iterations as well (0: only when signalled and at the end).
    signals: install the SIGUSR1/SIGTERM handlers (main thread only), when
    there is a directory or a Slurm job to requeue.

    The progress goes to DIR/checkpoint.json, the registered state to
    DIR/state-N.pt (torch.save), N counting the saves: the state file is
    written first, then the JSON that names it, each to a temporary file
    renamed into place, and the older state file is removed last, so a job
    killed at any point leaves a checkpoint whose state file exists.
    """

    def __init__(self, directory=None, every=0, signals=True, env=None, run=None):
        env = os.environ if env is None else env
        self.dir = checkpoint_dir(env) if directory is None else directory
        self.every = int(every)
        if self.every < 0:
            raise ValueError("checkpoint every %d iterations: must be >= 0" % self.every)
        self.mode = requeue_mode(env)
        self.job_id = slurm_job_id(env)
        self._run = run or _run_command
        self.objects = {}
        self.iterations = 0  # iterations done (the next one's index)
        self.epoch = 0  # the epoch in progress
        self.batch = 0  # batches done in self.epoch
        self.samples = 0
        self.saves = 0
        self.resumes = 0
        self.resumed = False
        self.stop_signal = None  # "SIGUSR1" or "SIGTERM" once asked to stop
        self._requeue = False
        self._state_file = None
        self._loaded = None
        self.load()
        # Without a checkpoint directory and outside Slurm there is nothing
        # to save or requeue: the signals keep their default action, so a
        # job behaves as it did (the profiler's probe may own its loop).
        if signals and (self.dir or self.mode != "none"):
            self.install()

    # -- signals --

    def install(self):
        """Turn SIGUSR1 into a stop with a requeue and SIGTERM into a stop
        without one; both take effect at the end of the iteration."""
        import signal

        def on_usr1(signum, frame):
            if self.stop_signal is None:
                self.stop_signal, self._requeue = "SIGUSR1", True

        def on_term(signum, frame):
            if self.stop_signal is None:
                self.stop_signal = "SIGTERM"

        signal.signal(signal.SIGUSR1, on_usr1)
        signal.signal(signal.SIGTERM, on_term)

    # -- state --

    def register(self, **objects):
        """Keep these objects' state_dict() in the checkpoint (e.g.
        model=model, optimizer=optimizer); a checkpoint already loaded is
        restored into them now. Returns self."""
        for name, obj in objects.items():
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise TypeError("checkpoint: %s (%s) has no state_dict/load_state_dict" % (name, type(obj).__name__))
            self.objects[name] = obj
        self._restore(objects)
        return self

    def load(self):
        """Read DIR/checkpoint.json, if there is one, into the progress
        counters. Raises ValueError naming the file when it is not ours."""
        if not self.dir:
            return False
        path = os.path.join(self.dir, CHECKPOINT_FILE)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise ValueError("checkpoint %s: %s" % (path, e))
        with os.fdopen(fd, "rb") as f:
            import stat
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError("checkpoint %s: not a regular file" % path)
            data = f.read(_MAX_CHECKPOINT_JSON + 1)
        if len(data) > _MAX_CHECKPOINT_JSON:
            raise ValueError("checkpoint %s: over %d bytes, not a synergy checkpoint" % (path, _MAX_CHECKPOINT_JSON))
        try:
            c = json.loads(data)
        except ValueError as e:
            raise ValueError("checkpoint %s: %s" % (path, e))
        ints = ("iterations", "epoch", "batch", "samples", "saves", "resumes")
        if not isinstance(c, dict) or c.get("version") != _CHECKPOINT_VERSION or c.get("job") != "synergy_metrics":
            raise ValueError("checkpoint %s: not a version %d synergy_metrics checkpoint" % (path, _CHECKPOINT_VERSION))
        for k in ints:
            v = c.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError("checkpoint %s: %s = %r, want an integer >= 0" % (path, k, v))
        state = c.get("state_file")
        if state is not None and (not isinstance(state, str) or os.path.basename(state) != state or not state.startswith("state-")):
            raise ValueError("checkpoint %s: state_file %r is not a file of the checkpoint directory" % (path, state))
        self.iterations, self.epoch, self.batch = c["iterations"], c["epoch"], c["batch"]
        self.samples, self.saves, self.resumes = c["samples"], c["saves"], c["resumes"] + 1
        self._state_file = state
        self._loaded = c
        self.resumed = True
        return True

    def _restore(self, objects):
        if not self.resumed or not objects:
            return
        if self._state_file is None:
            raise ValueError("checkpoint %s holds no state for %s" % (self.dir, ", ".join(sorted(objects))))
        import torch
        path = os.path.join(self.dir, self._state_file)
        state = torch.load(path, map_location="cpu")
        for name, obj in objects.items():
            if name not in state:
                raise ValueError("checkpoint %s holds no state for %s (it has %s)" % (path, name, ", ".join(sorted(state))))
            obj.load_state_dict(state[name])

    # -- the loop --

    def resume_pass(self, loader, epoch):
        """The pass over loader for this epoch: in the epoch a checkpoint was
        saved in, without the batches already done (they are fetched and
        dropped: a torch DataLoader cannot skip without loading). Seed the
        shuffle per epoch (seed_epoch) for the same batches to come."""
        skip = self.batch if epoch == self.epoch else 0
        if epoch != self.epoch:
            self.epoch, self.batch = epoch, 0
        if skip == 0:
            return loader

        def rest():
            it = iter(loader)
            for _ in range(skip):
                try:
                    next(it)
                except StopIteration:
                    return
            yield from it
        return rest()

    def step_done(self, iterations=None, samples=None):
        """Count one iteration done (iterations: the caller's count, e.g.
        SynergyMetrics.step_done()'s, checked against ours), save every
        `every` iterations, and when signalled save, ask Slurm to requeue
        the job (SIGUSR1) and exit with EXIT_PREEMPTED. Returns the
        iterations done."""
        self.iterations += 1
        self.batch += 1
        if samples is not None:
            self.samples += int(samples)
        if iterations is not None and iterations != self.iterations:
            raise ValueError("checkpoint: %d iterations counted, the caller says %d" % (self.iterations, iterations))
        if self.stop_signal is not None:
            self.preempt()
        if self.every and self.iterations % self.every == 0:
            self.save("periodic")
        return self.iterations

    def end_epoch(self):
        """The epoch in progress ended: the next starts at its first batch."""
        self.epoch, self.batch = self.epoch + 1, 0

    def preempt(self):
        """Save, ask Slurm to requeue the job when SIGUSR1 asked for it and
        the mode allows, and exit with EXIT_PREEMPTED (SystemExit, so the
        caller's finally blocks and `with` exits run)."""
        import sys
        saved = "no checkpoint directory: this run's work is lost"
        if self.dir:
            self.save("signal")
            saved = "checkpoint saved at iteration %d in %s" % (self.iterations, self.dir)
        print("synergy_metrics: stopped by %s; %s" % (self.stop_signal, saved), file=sys.stderr, flush=True)
        if self._requeue and self.mode != "none":
            verb = "requeuehold" if self.mode == "hold" else "requeue"
            err = self._run(["scontrol", verb, self.job_id])
            if err:
                print("synergy_metrics: scontrol %s %s: %s" % (verb, self.job_id, err), file=sys.stderr, flush=True)
            else:
                print("synergy_metrics: asked Slurm to %s job %s" % (verb, self.job_id), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_PREEMPTED)

    def save(self, reason):
        """Write the checkpoint now (reason: "signal", "periodic", "done")."""
        if not self.dir:
            return False
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        saves = self.saves + 1
        state_file, old = None, self._state_file
        if self.objects:
            import torch
            state_file = "state-%d.pt" % saves
            _atomic(os.path.join(self.dir, state_file),
                    lambda f: torch.save({k: o.state_dict() for k, o in self.objects.items()}, f))
        doc = {"version": _CHECKPOINT_VERSION, "job": "synergy_metrics", "iterations": self.iterations,
               "epoch": self.epoch, "batch": self.batch, "samples": self.samples, "saves": saves,
               "resumes": self.resumes, "reason": reason, "state_file": state_file, "ts": time.time()}
        _atomic(os.path.join(self.dir, CHECKPOINT_FILE), lambda f: f.write(json.dumps(doc).encode() + b"\n"))
        self.saves, self._state_file = saves, state_file
        if old and old != state_file:
            try:
                os.remove(os.path.join(self.dir, old))
            except OSError:
                pass
        return True


def checkpointer(every=0, **objects):
    """A Checkpointer from the environment with these objects registered
    (restored from the checkpoint when one exists): the line a script adds."""
    return Checkpointer(every=every).register(**objects)


def _atomic(path, write):
    """Write a file through a temporary one in its directory, synced and
    renamed over path: a reader sees the old file or the new one whole."""
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix="." + os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _run_command(argv):
    """Run argv (scontrol), returning "" or its error."""
    import subprocess
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, p.stdout.decode(errors="replace").strip())
    return ""
