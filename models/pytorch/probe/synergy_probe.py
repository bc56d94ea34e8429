"""synergy's injected DataLoader probe: profile an unmodified PyTorch script.

`synergy profile` puts this directory first on the job's PYTHONPATH; Python
then imports its sitecustomize.py at start-up, which calls install() here
(and then runs any other sitecustomize, e.g. Debian's). Nothing is imported
from torch until the script imports it: an import hook patches
torch.utils.data.dataloader as it loads, in place:

  DataLoader.__init__          records the loader (where it was built, batch
                               size, shuffling, num_workers) and, when
                               SYNERGY_PROBE_WORKERS is set, overrides
                               num_workers of a loader that asked for workers;
  DataLoader.__iter__          tags each iterator with its loader;
  _BaseDataLoaderIter.__next__ times each batch: the time next() blocked
                               (data wait), the time since the previous
                               batch was handed over (the step), samples.

One loader is measured (the "primary"): SYNERGY_PROBE_LOADER's, else the first
one iterated that shuffles, or the first one iterated when no loader built
so far shuffles (a validation loader built with shuffle=False is not taken
for the training loader). Its iterations become the metrics stream of
docs/job-contract.md, the iteration cap counts them, and the loader-only
mode drives it. Every loader is listed in the report. In replay mode
(SYNERGY_PROBE_REPLAY=1, the profiler's step-only run of a script it cannot
ask for synthetic data) the primary's first batch is handed out again and
again without the loader, so the script's own step is timed alone: the
step's ceiling, for the stall breakdown.

With SYNERGY_CONTROL_FILE and SYNERGY_CONTROL_ACK_FILE the probe listens
to the control channel (docs/job-contract.md, "The control channel") between
the primary's batches, in the script's loop and in the loader-only mode:
it changes the loader's workers mid-pass and replays the last batch, through
synergy_metrics.LoaderControl and TorchSource; when it stands down the
script's own SynergyMetrics.wrap() answers instead.

Configuration is environment variables only (docs/job-contract.md, "For the
profiler (Go side)"); a bad value stops the job at start-up with exit status
2 and a message naming the variable. The probe leaves a script that writes
the stream itself alone (it uses synergy_metrics.py, or the metrics file
grew by lines the probe did not write): it then writes no stream, caps
nothing and emulates nothing. Standard library only.
"""

import atexit
import importlib.abc
import importlib.util
import inspect
import json
import math
import os
import sys
import threading
import time
import weakref

VERSION = "synergy-probe/1"

ENV_METRICS_FILE = "SYNERGY_METRICS_FILE"
ENV_PROBE = "SYNERGY_PROBE"  # "off" (or "0", "false", "no"): do nothing
ENV_REPORT = "SYNERGY_PROBE_REPORT"  # path of the JSON report
ENV_MAX_ITERATIONS = "SYNERGY_PROBE_MAX_ITERATIONS"  # int >= 0; 0/unset: no cap
ENV_WORKERS = "SYNERGY_PROBE_WORKERS"  # int >= 0; unset: leave num_workers alone
ENV_LOADER = "SYNERGY_PROBE_LOADER"  # int >= 0: measure the loader built k-th (from 0)
ENV_STEP_S = "SYNERGY_PROBE_STEP_S"  # float > 0: loader-only mode, fixed step seconds
ENV_EMULATE_GPU = "SYNERGY_PROBE_EMULATE_GPU"  # loader-only mode, step from the table
ENV_MODEL = "SYNERGY_PROBE_MODEL"  # the table's model, with SYNERGY_PROBE_EMULATE_GPU
ENV_REPLAY = "SYNERGY_PROBE_REPLAY"  # "1": replay the primary's first batch, the loader idle (step alone)
ENV_OWNER = "SYNERGY_PROBE_OWNER_PID"  # set by the probe for its children; never by the profiler
ENV_CONTROL_FILE = "SYNERGY_CONTROL_FILE"  # the control channel's commands (docs/job-contract.md)
ENV_CONTROL_ACK_FILE = "SYNERGY_CONTROL_ACK_FILE"  # and its answers

EXIT_CONFIG = 2  # exit status for a bad SYNERGY_PROBE_* value

_DATALOADER_MODULE = "torch.utils.data.dataloader"


class ConfigError(ValueError):
    pass


def _env_int(env, name, minimum=0):
    raw = env.get(name, "").strip()
    if raw == "":
        return None
    try:
        v = int(raw)
    except ValueError:
        raise ConfigError("%s: %r is not an integer" % (name, raw)) from None
    if v < minimum:
        raise ConfigError("%s: %d must be >= %d" % (name, v, minimum))
    return v


def _env_seconds(env, name):
    raw = env.get(name, "").strip()
    if raw == "":
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ConfigError("%s: %r is not a number of seconds (e.g. 0.033)" % (name, raw)) from None
    if not (v > 0 and math.isfinite(v)):
        raise ConfigError("%s: %r must be a positive number of seconds" % (name, raw))
    return v


def enabled(env=None):
    """False when SYNERGY_PROBE is off, 0, false or no."""
    env = os.environ if env is None else env
    return env.get(ENV_PROBE, "").strip().lower() not in ("off", "0", "false", "no")


class Config:
    """The probe's settings, read from the environment (see the module doc
    and docs/job-contract.md). Raises ConfigError naming the variable."""

    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.metrics_file = env.get(ENV_METRICS_FILE, "") or None
        self.report = env.get(ENV_REPORT, "") or None
        self.max_iterations = _env_int(env, ENV_MAX_ITERATIONS) or 0
        self.workers = _env_int(env, ENV_WORKERS)
        self.loader = _env_int(env, ENV_LOADER)
        self.step_s = _env_seconds(env, ENV_STEP_S)
        self.gpu = env.get(ENV_EMULATE_GPU, "").strip() or None
        self.model = env.get(ENV_MODEL, "").strip() or None
        replay = env.get(ENV_REPLAY, "").strip().lower()
        if replay not in ("", "0", "1", "false", "true", "no", "yes"):
            raise ConfigError("%s=%s: want 1 or 0" % (ENV_REPLAY, replay))
        self.replay = replay in ("1", "true", "yes")
        if self.replay and (self.step_s is not None or self.gpu is not None):
            raise ConfigError("%s: the replay mode times the script's own step; the loader-only mode (%s, %s) emulates it: give one" % (
                ENV_REPLAY, ENV_STEP_S, ENV_EMULATE_GPU))
        if self.step_s is not None and self.gpu is not None:
            raise ConfigError("%s and %s: give one of them, not both" % (ENV_STEP_S, ENV_EMULATE_GPU))
        if self.gpu is not None and self.model is None:
            raise ConfigError("%s=%s: %s must name the model whose step time to use" % (ENV_EMULATE_GPU, self.gpu, ENV_MODEL))
        self.control = env.get(ENV_CONTROL_FILE, "") or None
        self.control_ack = env.get(ENV_CONTROL_ACK_FILE, "") or None
        if (self.control is None) != (self.control_ack is None):
            raise ConfigError("%s and %s: give both or neither" % (ENV_CONTROL_FILE, ENV_CONTROL_ACK_FILE))
        if self.gpu is not None:
            # Check the pair now (the batch is known only at the first batch).
            try:
                _helper().gpu_step(self.model, self.gpu, 1)
            except ValueError as e:
                raise ConfigError("%s=%s %s=%s: %s" % (ENV_EMULATE_GPU, self.gpu, ENV_MODEL, self.model, e)) from None

    @property
    def emulate(self):
        return self.step_s is not None or self.gpu is not None

    def as_dict(self):
        return {"metrics_file": self.metrics_file, "max_iterations": self.max_iterations, "workers": self.workers,
                "loader": self.loader, "step_s": self.step_s, "emulate_gpu": self.gpu, "model": self.model,
                "replay": self.replay, "control_file": self.control}


_HELPER = []


def _helper():
    """synergy_metrics.py, loaded from beside this file or its parent under a
    private name, so it never shadows (or is shadowed by) a copy the script
    imports itself."""
    if _HELPER:
        return _HELPER[0]
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (here, os.path.dirname(here)):
        path = os.path.join(d, "synergy_metrics.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_synergy_probe_metrics", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            _HELPER.append(mod)
            return mod
    raise ConfigError("synergy_metrics.py not found beside %s or in its parent directory" % here)


def _call_site(skip_dirs):
    """file:line of the innermost caller outside skip_dirs (torch's package
    and this probe's directory)."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not any(fn.startswith(d + os.sep) for d in skip_dirs):
            return "%s:%d" % (fn, f.f_lineno)
        f = f.f_back
    return "?"


class LoaderRecord:
    """What the probe knows of one DataLoader."""

    def __init__(self, index, loader, site, asked, used, note):
        self.index, self.site = index, site
        self.ref = weakref.ref(loader)
        self.cls = type(loader).__name__
        self.batch_size = getattr(loader, "batch_size", None)
        sampler = getattr(loader, "sampler", None)
        self.shuffle = type(sampler).__name__ in ("RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler") or \
            bool(getattr(sampler, "shuffle", False))
        self.workers_asked, self.workers, self.workers_note = asked, used, note
        self.primary = False
        self.passes = 0  # iterators started (epochs)
        self.batches = 0
        self.samples = 0
        self.data_wait_s = 0.0
        self.first_batch_at = None
        self.cpus = None  # this process's CPU affinity at the first batch
        self.worker_cpus = None  # {pid: affinity} of the loader's worker processes then
        self.workers_changes = 0  # changes of workers through the control channel
        self.switched_to = None  # the iterator the last change put in place
        self.length = None  # len(loader): batches a pass, where known

    def note_affinity(self, it):
        """Record the CPUs this process and the iterator's worker processes
        may run on (the profiler checks them against the point's cpuset)."""
        try:
            self.cpus = sorted(os.sched_getaffinity(0))
            self.worker_cpus = {}
            for w in getattr(it, "_workers", None) or []:
                pid = getattr(w, "pid", None)
                if pid:
                    self.worker_cpus[str(pid)] = sorted(os.sched_getaffinity(pid))
        except (AttributeError, OSError):
            pass  # no sched_getaffinity here, or a worker already gone

    def note_len(self):
        """Record len(loader), the batches of one pass, where the loader
        knows it (an IterableDataset's may not)."""
        loader = self.ref()
        try:
            n = len(loader) if loader is not None else None
        except Exception:
            n = None
        if isinstance(n, int) and n > 0:
            self.length = n

    def as_dict(self):
        d = {"index": self.index, "site": self.site, "class": self.cls, "batch_size": self.batch_size,
             "shuffle": self.shuffle, "num_workers_asked": self.workers_asked, "num_workers": self.workers,
             "primary": self.primary, "passes": self.passes, "batches": self.batches, "samples": self.samples,
             "data_wait_s": round(self.data_wait_s, 6)}
        if self.workers_note:
            d["workers_note"] = self.workers_note
        if self.workers_changes:
            d["workers_changes"] = self.workers_changes
        if self.length:
            d["len"] = self.length
        if self.cpus is not None:
            d["cpus"] = self.cpus
            d["worker_cpus"] = self.worker_cpus
        return d


class Probe:
    """The probe's state in one process; clock: monotonic seconds."""

    def __init__(self, config, clock=time.perf_counter, env=None):
        env = os.environ if env is None else env
        self.cfg = config
        self.clock = clock
        self.pid = os.getpid()
        self.forked = False  # set in a forked child (a loader worker): the probe is passive there
        # The first process of the job owns the report; its children (a
        # launcher's trainer, spawned loader workers) write it only once
        # they iterate a loader.
        self.owner = env.get(ENV_OWNER, "") in ("", str(self.pid))
        if self.owner:
            env[ENV_OWNER] = str(self.pid)
        self.loaders = []
        self.primary = None
        self.stream = "none"  # "probe" once it writes, "script" once it stood down
        self.metrics = None  # a synergy_metrics.SynergyMetrics writing the stream
        self.step = None  # the GPUStep of the loader-only mode, once resolved
        self.iterations = 0  # primary iterations whose step ended
        self.state = "running"
        self.notes = []
        self.patched = False
        self._open = None  # the primary's iteration in its step: (samples, data_wait_s, start, epoch)
        self._exiting = False
        self._exited = False
        self.crashed = None  # the script's uncaught exception, "Type: message"
        h = _helper()
        self._batch_size = h.batch_size
        # The control channel's commands and the replay mode, applied to
        # the primary's batches (h.LoaderControl); channel None without one.
        self.ctl = h.LoaderControl(h.control_channel({ENV_CONTROL_FILE: config.control or "",
                                                      ENV_CONTROL_ACK_FILE: config.control_ack or ""}))

    # ---- report ----------------------------------------------------------

    def report_dict(self):
        mods = sys.modules
        d = {"probe": VERSION, "pid": self.pid, "state": self.state, "stream": self.stream,
             "iterations": self.iterations, "config": self.cfg.as_dict(),
             "torch_imported": "torch" in mods, "patched": self.patched,
             "loaders": [r.as_dict() for r in self.loaders],
             "primary": self.primary.index if self.primary else None,
             "threads": _helper().current_threads()}
        if self.step is not None:
            d["emulated"] = {"step_s": self.step.step_s, "source": self.step.source, "label": self.step.label}
        if not any(r.batches for r in self.loaders):
            d["fallback"] = "wall_clock"
        notes = list(self.notes)
        if "nvidia.dali" in mods and not any("nvidia.dali" in n for n in notes):
            notes.append("nvidia.dali is imported: DALI pipelines are not probed")
        d["notes"] = notes
        return d

    def write_report(self, final=False):
        path = self.cfg.report
        if not path or os.getpid() != self.pid:
            return
        active = any(r.batches for r in self.loaders)
        if not self.owner and not active:
            return  # a child that saw nothing (e.g. a spawned loader worker)
        if self.owner and not active and final:
            # A launcher whose child trained: keep the child's report.
            try:
                with open(path) as f:
                    other = json.load(f)
                if other.get("pid") != self.pid and any(l.get("batches") for l in other.get("loaders", [])):
                    return
            except (OSError, ValueError):
                pass
        data = json.dumps(self.report_dict(), indent=1, sort_keys=True) + "\n"
        tmp = "%s.%d.tmp" % (path, self.pid)
        try:
            with open(tmp, "w") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as e:
            sys.stderr.write("synergy-probe: %s: cannot write the report: %s\n" % (ENV_REPORT, e))

    def after_fork(self):
        self.forked = True

    def excepthook(self, orig):
        """sys.excepthook: remember the script's uncaught exception (the
        report names it, and no note follows its traceback), then print it
        as before."""
        def hook(typ, value, tb):
            if os.getpid() == self.pid and not issubclass(typ, SystemExit):
                self.crashed = "%s: %s" % (typ.__name__, value)
            return orig(typ, value, tb)
        return hook

    def at_exit(self):
        if os.getpid() != self.pid or self._exited:
            return
        self._exited = True
        if self.state == "running":
            self.state = "exited"
        if not any(r.batches for r in self.loaders) and self.owner:
            what = "no torch.utils.data.DataLoader was iterated" if self.patched or "torch" in sys.modules else \
                "the script never imported torch's DataLoader"
            msg = "%s in this run: the profiler measures it only where it knows the iterations it ran " \
                  "(--progress-regex, an {iterations} template)" % what
            if "nvidia.dali" in sys.modules:
                msg += " (nvidia.dali is imported: DALI pipelines are not probed)"
            self.notes.append(msg)
            if self.crashed is None:
                # After the script's own traceback the note would be its last
                # line, read for the error: the report keeps it.
                sys.stderr.write("synergy-probe: %s\n" % msg)
        if self.crashed is not None:
            self.notes.append("the script failed: %s" % self.crashed)
        if self.metrics is not None:
            self.metrics.close()
        self.write_report(final=True)

    # ---- DataLoader patches -----------------------------------------------

    def patch(self, module):
        """Patch torch.utils.data.dataloader's classes in place."""
        DataLoader = module.DataLoader
        BaseIter = module._BaseDataLoaderIter
        if getattr(DataLoader, "_synergy_probe", False):
            return
        probe = self
        orig_init, orig_iter, orig_next = DataLoader.__init__, DataLoader.__iter__, BaseIter.__next__
        fresh_iter = _helper().fresh_iter
        if self.ctl.channel is not None:
            _helper().record_dispatch(module)  # what a change of workers fetches again
        sig = inspect.signature(orig_init)
        # torch/utils/data/dataloader.py -> torch/
        torch_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
        self._skip_dirs = (torch_dir, os.path.dirname(os.path.abspath(__file__)))

        def __init__(self, *args, **kwargs):
            if probe.forked:
                return orig_init(self, *args, **kwargs)
            args, kwargs, asked, used, note = probe.override_workers(sig, self, args, kwargs)
            orig_init(self, *args, **kwargs)
            probe.register(self, asked, used, note)

        def __iter__(self):
            it = fresh_iter(self, orig_iter)
            rec = self.__dict__.get("_synergy_probe_record")
            if rec is not None:
                rec.passes += 1
                try:
                    it._synergy_probe_record = rec
                    if probe.cfg.emulate or probe.ctl.channel is not None:
                        # The loader-only mode starts new passes itself, and
                        # a change of workers clones the loader: keep it
                        # alive as long as its iterator (in `for b in
                        # DataLoader(...)` nothing else does).
                        it._synergy_probe_loader = self
                except AttributeError:
                    pass
            return it

        def __next__(self):
            rec = getattr(self, "_synergy_probe_record", None)
            if rec is None or probe.forked:
                return orig_next(self)
            return probe.next_batch(self, rec, orig_next)

        for obj, name, fn in ((DataLoader, "__init__", __init__), (DataLoader, "__iter__", __iter__),
                              (BaseIter, "__next__", __next__)):
            fn.__wrapped__ = getattr(obj, name)
            fn.__name__, fn.__qualname__, fn.__doc__ = name, getattr(obj, name).__qualname__, getattr(obj, name).__doc__
            setattr(obj, name, fn)
        DataLoader._synergy_probe = True
        self._orig_iter = orig_iter
        self.patched = True

    def override_workers(self, sig, loader, args, kwargs):
        """Apply SYNERGY_PROBE_WORKERS to a DataLoader's arguments. Returns
        (args, kwargs, workers asked, workers used, note)."""
        try:
            bound = sig.bind(loader, *args, **kwargs)
        except TypeError:
            return args, kwargs, None, None, None  # DataLoader itself will say what is wrong
        asked = bound.arguments.get("num_workers", 0)
        want = self.cfg.workers
        if want is None or not isinstance(asked, int):
            return args, kwargs, asked, asked, None
        if asked == 0:
            return args, kwargs, asked, asked, "kept 0: the script loads this one in-process"
        if want == asked:
            return args, kwargs, asked, asked, None
        bound.arguments["num_workers"] = want
        if want == 0:
            # DataLoader refuses these without workers.
            for k in ("persistent_workers", "prefetch_factor", "multiprocessing_context"):
                bound.arguments.pop(k, None)
        a = bound.args[1:]
        return a, bound.kwargs, asked, want, "%s=%d (the script asked for %d)" % (ENV_WORKERS, want, asked)

    def register(self, loader, asked, used, note):
        if asked is None:
            asked = used = getattr(loader, "num_workers", None)
        rec = LoaderRecord(len(self.loaders), loader, _call_site(self._skip_dirs), asked, used, note)
        self.loaders.append(rec)
        loader.__dict__["_synergy_probe_record"] = rec

    # ---- the measured loop -------------------------------------------------

    def is_primary(self, rec):
        if self.primary is not None:
            return rec is self.primary
        if self.cfg.loader is not None:
            ok = rec.index == self.cfg.loader
        else:
            ok = rec.shuffle or not any(r.shuffle for r in self.loaders)
        if ok:
            rec.primary = True
            self.primary = rec
        return ok

    def script_writes_stream(self):
        """True when the script writes the metrics stream itself: an enabled
        SynergyMetrics of its own copy of synergy_metrics.py exists, or the
        metrics file holds bytes the probe did not write."""
        for name, mod in list(sys.modules.items()):
            if name == "synergy_metrics" or name.endswith(".synergy_metrics"):
                cls = getattr(mod, "SynergyMetrics", None)
                if getattr(cls, "enabled_instances", 0) > 0:
                    return True
        if self.cfg.metrics_file and self.metrics is None:
            try:
                return os.path.getsize(self.cfg.metrics_file) > 0
            except OSError:
                return False
        return False

    def source(self, it, rec, orig_next):
        """The primary iterator's batches as the control channel sees them
        (a TorchSource kept on the script's iterator: after a change of
        workers it fetches from the new one)."""
        src = it.__dict__.get("_synergy_source")
        if src is None:
            loader = getattr(it, "_synergy_probe_loader", None)
            if loader is None:  # never `or`: that asks the loader for its len()
                loader = rec.ref()
            src = it.__dict__["_synergy_source"] = _helper().TorchSource(loader, it, orig_next)
        return src

    @staticmethod
    def note_switch(rec, it, src):
        """After the control channel changed the primary's workers (src
        fetches from another iterator than the script's it): record them."""
        if src.cur is not it and src.cur is not rec.switched_to:
            rec.switched_to = src.cur
            rec.workers = src.workers()
            rec.workers_changes += 1
            if src.cur is not None:
                rec.note_affinity(src.cur)

    def next_batch(self, it, rec, orig_next):
        t0 = self.clock()
        primary = rec is self.primary or (self.stream != "script" and self.primary is None and self.is_primary(rec))
        if primary:
            self.end_step(t0)
            self.check_cap()
            src = self.source(it, rec, orig_next)
            self.ctl.poll(src)
            try:
                # Replay mode: the last batch again (the step alone, the
                # loader idle); else the loader's, from the iterator a
                # change of workers put in place of the script's.
                batch = self.ctl.fetch(src)
            except StopIteration:
                self.write_report()  # a pass ended (its last step ended at t0)
                raise
        else:
            batch = orig_next(it)
        t1 = self.clock()
        n = self.samples(batch)
        rec.batches += 1
        rec.samples += n or 0
        rec.data_wait_s += t1 - t0
        if primary:
            self.note_switch(rec, it, src)
        if rec.first_batch_at is None:
            rec.first_batch_at = t1
            rec.note_affinity(it)
            rec.note_len()
            if primary and self.script_writes_stream():
                self.stand_down()
                primary = False
            if primary and self.cfg.replay:
                self.ctl.arm()  # this batch, handed out again and again
                self.notes.append("replay mode: the first batch is handed out again and again, the loader idle: "
                                  "the rate is the script's step alone")
                sys.stderr.write("synergy-probe: replay mode: timing the step alone on the first batch\n")
            self.write_report()
        if primary:
            self._open = (n, t1 - t0, t1, rec.passes - 1)
            self.ctl.delivered(batch, self.iterations, src)
            if self.cfg.emulate:
                self.drive(it, rec, orig_next)  # never returns
        return batch

    def samples(self, batch):
        n = self._batch_size(batch)
        return int(n) if n is not None else 0

    def end_step(self, now):
        """The primary's step ended at now: write its line."""
        o, self._open = self._open, None
        if o is None:
            return
        n, wait, start, epoch = o
        step = now - start
        if self.stream == "none":
            if self.script_writes_stream():
                self.stand_down()
                return
            self.stream = "probe"
            if self.cfg.metrics_file:
                h = _helper()
                # The probe's private copy of the helper is not in
                # sys.modules, so this writer is never taken for the script's.
                self.metrics = h.SynergyMetrics(self.cfg.metrics_file, emulated=self.step or False)
        if self.metrics is not None:
            self.metrics.record(n, wait, step, epoch=epoch, intended_s=self.step.step_s if self.step else None)
        self.iterations += 1

    def stand_down(self):
        self.stream = "script"
        self._open = None
        self.ctl.release()  # the script's helper answers the control channel, if anyone
        if self.primary is not None:
            self.primary.primary = False
            self.primary = None
        self.notes.append("the script writes the metrics stream itself: the probe writes none, caps nothing "
                          "and emulates nothing")
        self.write_report()  # the job may be stopped before it exits: say so now

    def check_cap(self):
        cap = self.cfg.max_iterations
        if not cap or self.iterations < cap:
            return
        self.state = "capped"
        if self._exiting:
            # The script caught the SystemExit and asked for more: leave now.
            self.at_exit()
            sys.stderr.flush()
            os._exit(0)
        self._exiting = True
        sys.stderr.write("synergy-probe: stopped after %d iterations (%s)\n" % (self.iterations, ENV_MAX_ITERATIONS))
        self.at_exit()
        if threading.current_thread() is not threading.main_thread():
            sys.stderr.flush()
            os._exit(0)
        raise SystemExit(0)

    def drive(self, it, rec, orig_next):
        """Loader-only mode: from the primary's first batch on, wait the
        emulated step per batch and fetch the next batch from the job's own
        loader, epoch after epoch, until the cap; the model never runs."""
        h = _helper()
        n = self._open[0]
        if self.cfg.gpu is not None:
            try:
                self.step = h.gpu_step(self.cfg.model, self.cfg.gpu, n or rec.batch_size or 1)
            except ValueError as e:
                self.fail("%s/%s: %s" % (ENV_EMULATE_GPU, ENV_MODEL, e))
        else:
            self.step = h.fixed_step(self.cfg.step_s)
        sys.stderr.write("synergy-probe: loader-only mode: the model never runs; each step is a %.1f ms wait (%s)%s\n" % (
            self.step.step_s * 1e3, self.step.label, "" if self.cfg.max_iterations else "; no iteration cap: runs until killed"))
        self.write_report()
        loader = getattr(it, "_synergy_probe_loader", None)
        if loader is None:
            loader = rec.ref()
        src = self.source(it, rec, orig_next)
        while True:
            self.step.wait()
            t0 = self.clock()
            self.end_step(t0)
            self.check_cap()
            self.ctl.poll(src)
            try:
                batch = self.ctl.fetch(src)
            except StopIteration:
                if loader is None:
                    self.fail("the loader of the loader-only mode is gone")
                it = _helper().fresh_iter(loader, self._orig_iter)
                it._synergy_probe_loader = loader
                src = self.source(it, rec, orig_next)
                rec.passes += 1
                self.write_report()
                t0 = self.clock()
                batch = self.ctl.fetch(src)
            t1 = self.clock()
            n = self.samples(batch)
            rec.batches += 1
            rec.samples += n
            rec.data_wait_s += t1 - t0
            self._open = (n, t1 - t0, t1, rec.passes - 1)
            self.note_switch(rec, it, src)
            self.ctl.delivered(batch, self.iterations, src)
            del batch

    def fail(self, msg):
        self.state = "error"
        self.notes.append(msg)
        sys.stderr.write("synergy-probe: %s\n" % msg)
        self.write_report(final=True)
        sys.stderr.flush()
        os._exit(EXIT_CONFIG)


class _Hook(importlib.abc.MetaPathFinder):
    """Patches torch.utils.data.dataloader right after it executes."""

    def __init__(self, probe):
        self.probe = probe

    def find_spec(self, name, path, target=None):
        if name != _DATALOADER_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        orig_exec = loader.exec_module
        probe = self.probe

        def exec_module(module):
            orig_exec(module)
            probe.patch(module)

        loader.exec_module = exec_module
        return spec


_INSTALLED = []


def install(env=None):
    """Read the configuration and hook torch's DataLoader; returns the Probe,
    or None when SYNERGY_PROBE=off. A bad setting exits with status 2."""
    if _INSTALLED:
        return _INSTALLED[0]
    if not enabled(env):
        return None
    try:
        cfg = Config(env)
    except ConfigError as e:
        sys.stderr.write("synergy-probe: %s\n" % e)
        path = (os.environ if env is None else env).get(ENV_REPORT, "")
        if path:
            try:
                with open(path, "w") as f:
                    json.dump({"probe": VERSION, "pid": os.getpid(), "state": "error", "notes": [str(e)]}, f)
            except OSError:
                pass
        sys.stderr.flush()
        os._exit(EXIT_CONFIG)
    probe = Probe(cfg, env=env)
    _INSTALLED.append(probe)
    mod = sys.modules.get(_DATALOADER_MODULE)
    if mod is not None:
        probe.patch(mod)
    else:
        sys.meta_path.insert(0, _Hook(probe))
    atexit.register(probe.at_exit)
    sys.excepthook = probe.excepthook(sys.excepthook)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=probe.after_fork)
    if probe.owner:
        probe.write_report()
    return probe
