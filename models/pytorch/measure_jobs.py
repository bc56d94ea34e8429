#!/usr/bin/env python3
"""Measure the reference jobs by hand, before (and beside) `synergy profile`.

  measure_jobs.py cores  --job image|lm|speech --data D [--cpus 0 0,1] [--reps 3] [--docker IMAGE] ...
  measure_jobs.py memory --job speech --data D --limits 2GiB,640MiB [--read-bps 16MB] [--cpus 0,1] ...

cores:  runs the job pinned to each CPU list with `taskset -c` (with
        --docker, in a container of IMAGE with --cpuset-cpus), with as many
        loader workers and OMP_NUM_THREADS as the list has CPUs, for
        --iterations iterations; throughput is samples over the stream's
        time after --warmup iterations. Repeats --reps times, alternating the
        CPU lists, and prints each list's median and its ratio to the first.
memory: runs the job in a cgroup v1 memory group of each limit (and a blkio
        read-bandwidth limit on the dataset's disk, standing for remote
        storage, as `synergy profile --disk-read-bps` does), the dataset
        evicted from the page cache first (posix_fadvise DONTNEED), for
        --epochs passes; throughput is taken over the passes after the first
        (the steady state, once the cache has filled as far as the limit
        lets it). Needs root and cgroup v1 memory and blkio controllers.

The job runs with the emulated GPU step (--gpu, default v100) unless
--gpu none. Run it under the host lock: flock /tmp/synergy-real.lock ...
Prints a table and, with --json FILE, writes the figures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = {"image": "train_imagenet.py", "lm": "train_lm.py", "speech": "train_speech.py"}
BATCH = {"image": 32, "lm": 20, "speech": 32}


def parse_size(text):
    sys.path.insert(0, HERE)
    from gen_data import parse_bytes
    return parse_bytes(text, "size")


def throughput(path, warmup=0, min_epoch=None, max_epoch=None):
    """samples/s over the stream's iterations from warmup on, of those whose
    epoch is in [min_epoch, max_epoch] when given, and the mean data-wait
    fraction; None when too few lines."""
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.endswith("\n")]
    if min_epoch is not None:
        lines = [l for l in lines if l.get("epoch", 0) >= min_epoch]
    if max_epoch is not None:
        lines = [l for l in lines if l.get("epoch", 0) <= max_epoch]
    lines = lines[warmup:]
    if len(lines) < 3:
        return None, None, len(lines)
    span = lines[-1]["ts"] - lines[0]["ts"]
    samples = sum(l["samples"] for l in lines[1:])
    wait = sum(l["data_wait_s"] for l in lines[1:]) / span
    return samples / span, wait, len(lines)


def job_argv(a, python, script, data, workers, iterations):
    argv = [python, script, "--data", data, "-b", str(a.batch or BATCH[a.job]), "-j", str(workers),
            "--max-iterations", str(iterations), "--print-freq", "0"]
    if a.gpu != "none":
        argv += ["--emulate-gpu", a.gpu]
    return argv + a.extra


def priority(a):
    """A preexec function giving the job priority over unlocked background
    work: its own session, hence its own scheduler autogroup (with
    kernel.sched_autogroup_enabled, niceness acts only inside an autogroup),
    at niceness a.nice, and the job's processes at that niceness too."""
    def enter():
        if not a.nice:
            return
        os.setsid()
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(a.nice))
        except OSError:
            pass
        os.nice(a.nice)
    return enter


def run_cores(a):
    parent = None
    if a.docker and a.nice < 0:
        # Containers' processes sit in cgroups, where autogroup niceness does
        # not reach, under /docker (cpu.shares 1024): give them a parent
        # group of their own with the most shares instead.
        parent = "synergy-measure-%d" % os.getpid()
        d = "/sys/fs/cgroup/cpu/" + parent
        os.makedirs(d)
        with open(os.path.join(d, "cpu.shares"), "w") as f:
            f.write("262144")
    try:
        return _run_cores(a, parent)
    finally:
        if parent:
            for c in os.listdir("/sys/fs/cgroup"):
                d = os.path.join("/sys/fs/cgroup", c, parent)
                if os.path.isdir(d):
                    try:
                        os.rmdir(d)
                    except OSError as e:
                        print("measure_jobs: cannot remove %s: %s" % (d, e), file=sys.stderr)


def _run_cores(a, parent):
    rows = {c: [] for c in a.cpus}
    tmp = tempfile.mkdtemp(prefix="synergy-measure-")
    for rep in range(a.reps):
        order = a.cpus if rep % 2 == 0 else list(reversed(a.cpus))
        for cpus in order:
            n = len(cpus.split(","))
            metrics = os.path.join(tmp, "m.jsonl")
            if os.path.exists(metrics):
                os.remove(metrics)
            env = dict(os.environ, OMP_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n), SYNERGY_METRICS_FILE=metrics,
                       SYNERGY_POINT="cpus=%s" % cpus, PYTHONDONTWRITEBYTECODE="1")
            if a.docker:
                shares = ["--cgroup-parent", "/" + parent] if parent else []
                argv = ["docker", "run", "--rm", "--cpuset-cpus", cpus, "--shm-size", "1g"] + shares + [
                        "-v", "%s:/data:ro" % os.path.abspath(a.data), "-v", "%s:/m" % tmp,
                        "-e", "OMP_NUM_THREADS=%d" % n, "-e", "MKL_NUM_THREADS=%d" % n,
                        "-e", "SYNERGY_METRICS_FILE=/m/m.jsonl", "-e", "SYNERGY_POINT=cpus=%s" % cpus, a.docker] + \
                    job_argv(a, "python3", "/opt/synergy/" + JOBS[a.job], "/data", n, a.iterations)
            else:
                argv = ["taskset", "-c", cpus] + job_argv(a, a.python, os.path.join(HERE, JOBS[a.job]), a.data, n,
                                                          a.iterations)
            t0 = time.time()
            p = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=None if a.docker else priority(a))
            if p.returncode != 0:
                sys.exit("measure_jobs: %s failed (%d):\n%s" % (" ".join(argv), p.returncode, p.stderr[-3000:]))
            tput, wait, n_lines = throughput(metrics, warmup=a.warmup)
            rows[cpus].append({"samples_per_s": tput, "data_wait_frac": wait, "wall_s": time.time() - t0})
            print("  rep %d cpus %-5s %7.1f samples/s  data wait %4.0f%%  (%d lines, %.0f s)" % (
                rep + 1, cpus, tput, 100 * wait, n_lines, time.time() - t0), file=sys.stderr, flush=True)
    base = statistics.median(r["samples_per_s"] for r in rows[a.cpus[0]])
    out = {"job": a.job, "runner": "docker " + a.docker if a.docker else "local", "gpu": a.gpu,
           "batch": a.batch or BATCH[a.job], "iterations": a.iterations, "warmup": a.warmup, "points": []}
    print("%s (%s, batch %d, emulated %s): samples/s, median of %d" % (
        a.job, out["runner"], out["batch"], a.gpu, a.reps))
    for cpus in a.cpus:
        v = [r["samples_per_s"] for r in rows[cpus]]
        med = statistics.median(v)
        w = statistics.median(r["data_wait_frac"] for r in rows[cpus])
        print("  cpus %-5s %8.1f  [%.1f..%.1f]  x%.2f  data wait %.0f%%" % (cpus, med, min(v), max(v), med / base, 100 * w))
        out["points"].append({"cpus": cpus, "samples_per_s": med, "runs": v, "ratio": med / base, "data_wait_frac": w})
    return out


def own_cgroup(controller):
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                return os.path.join("/sys/fs/cgroup", controller, path.lstrip("/"))
    raise SystemExit("measure_jobs: no cgroup v1 %s controller in /proc/self/cgroup" % controller)


def disk_of(path):
    st = os.stat(path)
    return "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))


def evict(d):
    n = 0
    for root, _, files in os.walk(d):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            n += 1
    return n


def run_memory(a):
    if os.geteuid() != 0:
        sys.exit("measure_jobs: memory: needs root (cgroups)")
    tmp = tempfile.mkdtemp(prefix="synergy-measure-")
    size = sum(os.path.getsize(os.path.join(r, n)) for r, _, fs in os.walk(a.data) for n in fs)
    dev = disk_of(a.data)
    out = {"job": a.job, "gpu": a.gpu, "dataset_bytes": size, "read_bps": a.read_bps, "cpus": a.cpus[0], "points": []}
    n = len(a.cpus[0].split(","))
    # Major 254 on this VM is virtio; blkio throttles only whole disks, so
    # take the partition's disk when the dataset is on a partition.
    disk_dev = dev
    part = "/sys/dev/block/%s/partition" % dev
    if os.path.exists(part):
        disk_dev = os.path.basename(os.path.dirname(os.path.realpath("/sys/dev/block/%s" % dev)))
        with open("/sys/class/block/%s/dev" % disk_dev) as f:
            disk_dev = f.read().strip()
    for limit in a.limits:
        for rep in range(a.reps):
            name = "synergy-measure-%d-%d" % (os.getpid(), rep)
            mem = os.path.join(own_cgroup("memory"), name)
            blk = os.path.join(own_cgroup("blkio"), name)
            os.makedirs(mem)
            os.makedirs(blk)
            try:
                with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
                    f.write(str(limit))
                if a.read_bps:
                    with open(os.path.join(blk, "blkio.throttle.read_bps_device"), "w") as f:
                        f.write("%s %d" % (disk_dev, a.read_bps))
                evicted = evict(a.data)
                metrics = os.path.join(tmp, "m.jsonl")
                if os.path.exists(metrics):
                    os.remove(metrics)
                env = dict(os.environ, OMP_NUM_THREADS=str(n), SYNERGY_METRICS_FILE=metrics, PYTHONDONTWRITEBYTECODE="1")

                def enter(mem=mem, blk=blk, prio=priority(a)):
                    for g in (mem, blk):
                        with open(os.path.join(g, "cgroup.procs"), "w") as f:
                            f.write(str(os.getpid()))
                    prio()

                # No iteration cap: the job runs --epochs passes.
                argv = ["taskset", "-c", a.cpus[0]] + job_argv(
                    a, a.python, os.path.join(HERE, JOBS[a.job]), a.data, n, 0) + ["--epochs", str(a.epochs)]
                t0 = time.time()
                p = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=enter)
                with open(os.path.join(mem, "memory.max_usage_in_bytes")) as f:
                    peak = int(f.read())
                with open(os.path.join(mem, "memory.failcnt")) as f:
                    failcnt = int(f.read())
                with open(os.path.join(mem, "memory.stat")) as f:
                    stat = dict(l.split() for l in f)
                if p.returncode != 0:
                    print("measure_jobs: limit %d MiB: exit %d (OOM-killed?):\n%s" % (
                        limit >> 20, p.returncode, p.stderr[-2000:]), file=sys.stderr)
                    out["points"].append({"mem_limit_bytes": limit, "exit": p.returncode})
                    continue
                first, _, _ = throughput(metrics, warmup=a.warmup, max_epoch=0)
                tput, wait, n_lines = throughput(metrics, min_epoch=1)
                out["points"].append({"mem_limit_bytes": limit, "samples_per_s": tput, "first_pass_samples_per_s": first,
                                      "data_wait_frac": wait, "peak_bytes": peak, "failcnt": failcnt,
                                      "end_cache_bytes": int(stat.get("cache", 0)),
                                      "evicted_files": evicted, "wall_s": time.time() - t0})
                print("  limit %5d MiB rep %d: %7.1f samples/s after the first pass (first pass %.1f), data wait %.0f%%, "
                      "peak %d MiB, page cache at exit %d MiB, %d lines, %.0f s" % (
                          limit >> 20, rep + 1, tput or 0, first or 0, 100 * (wait or 0), peak >> 20,
                          int(stat.get("cache", 0)) >> 20, n_lines, time.time() - t0),
                      file=sys.stderr, flush=True)
            finally:
                for g in (mem, blk):
                    for _ in range(50):
                        try:
                            os.rmdir(g)
                            break
                        except OSError:
                            time.sleep(0.1)
    print("%s: dataset %d MiB, reads limited to %s B/s, cpus %s, emulated %s" % (
        a.job, size >> 20, a.read_bps or "unlimited", a.cpus[0], a.gpu))
    for p in out["points"]:
        if "samples_per_s" in p:
            print("  mem %5d MiB  %7.1f samples/s (first pass %.1f)  data wait %.0f%%  peak %d MiB" % (
                p["mem_limit_bytes"] >> 20, p["samples_per_s"] or 0, p["first_pass_samples_per_s"] or 0,
                100 * (p["data_wait_frac"] or 0), p["peak_bytes"] >> 20))
        else:
            print("  mem %5d MiB  exit %d" % (p["mem_limit_bytes"] >> 20, p["exit"]))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("cores", "memory"))
    p.add_argument("--job", choices=sorted(JOBS), required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--cpus", nargs="+", default=["0", "0,1"], help="CPU lists (taskset -c / --cpuset-cpus)")
    p.add_argument("--batch", type=int, default=0, help="batch (default: image 32, lm 20, speech 32)")
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--gpu", default="v100", help="emulated GPU, or none for the real step")
    p.add_argument("--python", default=os.environ.get("SYNERGY_PYTHON", "/usr/bin/python3"))
    p.add_argument("--docker", default="", metavar="IMAGE", help="cores: run in a container of IMAGE")
    p.add_argument("--limits", type=lambda s: [parse_size(x) for x in s.split(",")], default=[],
                   help="memory: memory limits, e.g. 2GiB,640MiB")
    p.add_argument("--read-bps", dest="read_bps", type=lambda s: parse_size(s) if s else 0, default=0,
                   help="memory: read bandwidth limit on the dataset's disk, e.g. 16MB")
    p.add_argument("--epochs", type=int, default=2, help="memory: passes over the data (default 2)")
    p.add_argument("--nice", type=int, default=0,
                   help="run the job in its own session (scheduler autogroup) at this niceness, e.g. -20: on a machine "
                        "shared with unlocked background work the job's pinned cores then go to it first; with "
                        "--docker, the containers run under a cgroup parent with the most CPU shares instead")
    p.add_argument("--json", default="", help="write the figures here")
    p.add_argument("extra", nargs="*", help="more arguments for the job (after --)")
    a = p.parse_args()
    if a.mode == "memory" and not a.limits:
        p.error("--limits: required in memory mode")
    out = run_cores(a) if a.mode == "cores" else run_memory(a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
