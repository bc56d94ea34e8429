#!/usr/bin/env python3
"""Run Gavel's ORIGINAL trace simulator and write its per-job results as JSON.

Our own code (synergy project).  It does not contain, copy or build Gavel:
it runs an existing checkout of stanford-futuredata/gavel given with
--gavel, executing that checkout's unmodified driver
scheduler/scripts/drivers/simulate_scheduler_with_trace.py as __main__ (via
runpy, with the driver's own command-line flags).  The only thing added is an
observer: Scheduler.shutdown, which the driver calls last, is wrapped so that
the scheduler's state (per-job arrival and completion times, final
timestamp) is recorded before the original shutdown runs.

Python needs numpy and scipy, plus cvxopt for LP policies (Debian:
python3-numpy python3-scipy python3-cvxopt python3-psutil).  cvxpy, gRPC and
matrix_completion are not needed: shim/cvxpy (our subset of cvxpy) and
shim/stubs (import-only stand-ins) are put on sys.path first.

Example:
  /usr/bin/python3 run_gavel.py --gavel /work/gavel-orig \\
      --trace /work/gavel-orig/scheduler/traces/physical_cluster/minimize_makespan.trace \\
      --throughputs /work/gavel-orig/scheduler/physical_cluster_throughputs.json \\
      --cluster-spec 8:16:24 --policy fifo --out fifo.json
"""

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def gavel_commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    stamp = os.path.join(root, ".gavel-commit")
    if os.path.exists(stamp):
        with open(stamp) as f:
            return f.read().strip()
    return "unknown"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gavel", required=True,
                    help="root of a checkout of stanford-futuredata/gavel")
    ap.add_argument("--trace", required=True, help="Gavel 10-field trace")
    ap.add_argument("--throughputs", required=True, help="throughputs JSON")
    ap.add_argument("--cluster-spec", default="8:16:24", help="V100:P100:K80")
    ap.add_argument("--policy", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-s", type=int, default=360,
                    help="Gavel's --time_per_iteration")
    ap.add_argument("--window", help="FIRST-LAST (inclusive job ids): the driver's "
                    "-s FIRST -e LAST+1, so the run ends when those jobs are done "
                    "and the mean is over them")
    ap.add_argument("--out", required=True, help="results JSON to write")
    ap.add_argument("--log", help="write Gavel's own log (stderr) here")
    ap.add_argument("--trace-facts", action="store_true",
                    help="also record each job's type, scale factor and steps "
                    "(only for traces we own: for Gavel's traces that would "
                    "republish its data)")
    ap.add_argument("--dump-alloc", type=int, default=0,
                    help="record this many allocations (the policy's inputs and X) "
                    "in --dump-alloc-file (JSON lines, gavel_observe.py)")
    ap.add_argument("--dump-alloc-file")
    ap.add_argument("--dump-from", type=float, default=0.0,
                    help="record allocations from this simulated time (s)")
    args = ap.parse_args()

    sched_dir = os.path.join(os.path.abspath(args.gavel), "scheduler")
    driver = os.path.join(sched_dir, "scripts", "drivers",
                          "simulate_scheduler_with_trace.py")
    if not os.path.exists(driver):
        sys.exit("--gavel %s: no %s" % (args.gavel, driver))
    sys.path[:0] = [os.path.join(HERE, "shim"), os.path.join(HERE, "shim", "stubs"),
                    sched_dir]
    import cvxpy  # noqa: E402  (our shim)
    import scheduler  # noqa: E402  (Gavel's, unmodified)

    captured = {}
    orig_shutdown = scheduler.Scheduler.shutdown

    def observed_shutdown(self):
        captured["end_s"] = float(self.get_current_timestamp())
        captured["start"] = {k[0]: float(v) for k, v in
                             self._per_job_start_timestamps.items()}
        captured["jct"] = {k[0]: (None if v is None else float(v)) for k, v in
                           self._job_completion_times.items()}
        captured["lease_ext"] = (self._num_lease_extensions,
                                 self._num_lease_extension_opportunities)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            captured["utilization"] = self.get_cluster_utilization()
        return orig_shutdown(self)

    scheduler.Scheduler.shutdown = observed_shutdown
    if args.dump_alloc:
        from gavel_observe import install_alloc_observer
        install_alloc_observer(scheduler, captured, args.dump_alloc_file,
                               args.dump_alloc, args.dump_from)

    argv = [driver, "-t", os.path.abspath(args.trace),
            "-p", args.policy,
            "--throughputs_file", os.path.abspath(args.throughputs),
            "-c", args.cluster_spec,
            "--seed", str(args.seed),
            "--time_per_iteration", str(args.round_s)]
    window = None
    if args.window:
        a, b = args.window.split("-")
        window = (int(a), int(b))
        argv += ["-s", str(window[0]), "-e", str(window[1] + 1)]
    stdout = io.StringIO()
    log = open(args.log, "w") if args.log else open(os.devnull, "w")
    old_argv = sys.argv
    sys.argv = argv
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(log):
            runpy.run_path(driver, run_name="__main__")
    finally:
        sys.argv = old_argv
        log.close()
    wall = time.perf_counter() - t0
    text = stdout.getvalue()

    # The driver's own printout, to cross-check what we observed.
    m = re.search(r"Average job completion time: ([0-9.]+) seconds", text)
    printed_mean = float(m.group(1)) if m else None
    printed = {int(a): float(b) for a, b in
               re.findall(r"^Job (\d+)(?: \(high priority\))?: ([0-9.]+)$",
                          text, re.M)}

    # Trace facts (type, scale factor, steps), recorded with --trace-facts.
    trace_rows = []
    with open(args.trace) as f:
        for line in f:
            fld = line.rstrip("\n").split("\t")
            trace_rows.append((fld[0], int(fld[6]), int(fld[5]), float(fld[9])))

    jobs = []
    for i, (jtype, sf, steps, arr) in enumerate(trace_rows):
        jct = captured["jct"].get(i)
        start = captured["start"].get(i, arr)
        rec = {"id": i}
        if args.trace_facts:
            rec.update({"job_type": jtype, "scale_factor": sf,
                        "total_steps": steps})
        rec.update({"arrival_s": start,
                    "finish_s": None if jct is None else start + jct,
                    "jct_s": jct})
        if i in printed and jct is not None and abs(printed[i] - jct) > 1e-3:
            sys.exit("job %d: printed JCT %.3f != observed %.6f"
                     % (i, printed[i], jct))
        jobs.append(rec)
    done = [j for j in jobs if j["jct_s"] is not None]
    measured = [j for j in done if window is None or window[0] <= j["id"] <= window[1]]
    mean = sum(j["jct_s"] for j in measured) / len(measured) if measured else None
    if printed_mean is not None and mean is not None and abs(printed_mean - mean) > 1e-2:
        sys.exit("mean JCT: printed %.3f != observed %.6f" % (printed_mean, mean))
    first = min(j["arrival_s"] for j in jobs)
    last = max(j["finish_s"] for j in done) if done else None
    backend = os.environ.get("GAVEL_SHIM_SOLVER", "cvxopt").lower()
    n_solves = cvxpy.stats["lp"] + cvxpy.stats["socp"]
    out = {
        "source": "gavel (original Python simulator, unmodified)",
        "gavel_commit": gavel_commit(args.gavel),
        "driver": "scheduler/scripts/drivers/simulate_scheduler_with_trace.py",
        "trace": os.path.basename(args.trace),
        "trace_sha256": sha256(args.trace),
        "throughputs": os.path.basename(args.throughputs),
        "throughputs_sha256": sha256(args.throughputs),
        "cluster_spec": args.cluster_spec,
        "policy": args.policy,
        "seed": args.seed,
        "round_s": args.round_s,
        "window": list(window) if window else None,
        "solver": ("none" if n_solves == 0 else
                   ("cvxopt.conelp (shim)" if backend == "cvxopt" or cvxpy.stats["socp"]
                    else "scipy HiGHS (shim)")),
        "solves": {"lp": cvxpy.stats["lp"], "socp": cvxpy.stats["socp"],
                   "seconds": round(cvxpy.stats["seconds"], 3),
                   "status": dict(sorted(cvxpy.stats["status"].items()))},
        "num_jobs": len(jobs),
        "num_finished": len(done),
        "mean_jct_s": mean,
        "end_s": captured.get("end_s"),
        "makespan_s": None if last is None else last - first,
        "utilization": captured.get("utilization"),
        "lease_extensions": list(captured.get("lease_ext", (0, 0))),
        "wall_s": round(wall, 2),
        "jobs": jobs,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    print("%s %s: %d/%d jobs, mean JCT %.1f s (%.2f h), makespan %.1f s, "
          "util %.3f, %d LP + %d SOCP solves, %.1f s wall"
          % (os.path.basename(args.trace), args.policy, len(done), len(jobs),
             mean or 0, (mean or 0) / 3600, out["makespan_s"] or 0,
             out["utilization"] or 0, cvxpy.stats["lp"], cvxpy.stats["socp"], wall))


if __name__ == "__main__":
    main()
