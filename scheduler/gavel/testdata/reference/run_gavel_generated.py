#!/usr/bin/env python3
"""Run Gavel's ORIGINAL generated-jobs simulator and write the window's JCTs as JSON.

Our own code (synergy project).  Like run_gavel.py it neither contains nor
copies Gavel: it runs an existing checkout's unmodified driver
scheduler/scripts/drivers/simulate_scheduler_with_generated_jobs.py as
__main__ (runpy, the driver's own flags), with shim/cvxpy and shim/stubs
first on sys.path.  Observers (wrappers that call the original and only
read state) record:

* at shutdown: every generated job (arrival, type, scale factor, steps,
  priority), its JCT, the window's mean JCT, utilisation, lease extensions;
* with --dump-alloc N --dump-alloc-file F: the first N allocations computed
  at or after --dump-from seconds (the policy's inputs and X, gavel_observe.py),
  to run our policies on exactly Gavel's inputs.

Example (issue 14's sustainable-load question, one point):
  nice -n 10 /usr/bin/python3 run_gavel_generated.py --gavel /work/gavel-orig \\
      --throughputs /work/gavel-orig/scheduler/simulation_throughputs.json \\
      --cluster-spec 36:36:36 --policy max_min_fairness_perf --jobs-per-hour 6 \\
      --seed 0 --window 4000-4999 --out mmfp-6.json
"""

import argparse
import json
import os
import runpy
import sys
import time

from gavel_observe import install_alloc_observer

HERE = os.path.dirname(os.path.abspath(__file__))


def job_facts(job):
    return {"job_type": job.job_type, "scale_factor": job.scale_factor,
            "total_steps": job.total_steps, "priority": job.priority_weight}


def install_observers(scheduler, captured, args):
    """Wraps Scheduler.shutdown (and, through gavel_observe,
    Scheduler._compute_allocation)."""
    orig_shutdown = scheduler.Scheduler.shutdown
    install_alloc_observer(scheduler, captured, args.dump_alloc_file, args.dump_alloc,
                           args.dump_from, args.progress)

    def observed_shutdown(self):
        captured["end_s"] = float(self.get_current_timestamp())
        captured["jobs"] = []
        for i, (arr, job) in enumerate(self._all_jobs):
            rec = {"id": i, "arrival_s": float(arr)}
            rec.update(job_facts(job))
            jid = scheduler.JobIdPair(i, None)
            jct = self._job_completion_times.get(jid)
            rec["jct_s"] = None if jct is None else float(jct)
            captured["jobs"].append(rec)
        captured["lease_ext"] = (self._num_lease_extensions,
                                 self._num_lease_extension_opportunities)
        return orig_shutdown(self)

    scheduler.Scheduler.shutdown = observed_shutdown


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gavel", required=True)
    ap.add_argument("--throughputs", required=True)
    ap.add_argument("--cluster-spec", default="36:36:36")
    ap.add_argument("--policy", required=True)
    ap.add_argument("--jobs-per-hour", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", default="4000-4999", help="FIRST-LAST job ids")
    ap.add_argument("--round-s", type=int, default=360)
    ap.add_argument("--dump-alloc", type=int, default=0,
                    help="record this many allocations (inputs and X) in --dump-alloc-file")
    ap.add_argument("--dump-alloc-file", help="JSON lines (gavel_observe.py)")
    ap.add_argument("--dump-from", type=float, default=0.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--progress", help="append a progress line here every 20 allocations")
    args = ap.parse_args()

    sched_dir = os.path.join(os.path.abspath(args.gavel), "scheduler")
    driver = os.path.join(sched_dir, "scripts", "drivers",
                          "simulate_scheduler_with_generated_jobs.py")
    sys.path[:0] = [os.path.join(HERE, "shim"), os.path.join(HERE, "shim", "stubs"),
                    sched_dir]
    import cvxpy  # noqa: E402  (our shim)
    import scheduler  # noqa: E402  (Gavel's, unmodified)
    from job_id_pair import JobIdPair  # noqa: E402
    scheduler.JobIdPair = JobIdPair

    captured = {}
    install_observers(scheduler, captured, args)
    first, last = (int(x) for x in args.window.split("-"))
    lam = 3600.0 / args.jobs_per_hour  # as Gavel's run_sweep_continuous.py
    argv = [driver, "-p", args.policy, "--throughputs_file",
            os.path.abspath(args.throughputs), "-c", args.cluster_spec,
            "--seed", str(args.seed), "-i", str(args.round_s), "-l", repr(lam),
            "-s", str(first), "-e", str(last + 1)]
    old_argv, sys.argv = sys.argv, argv
    t0 = time.perf_counter()
    try:
        runpy.run_path(driver, run_name="__main__")
    finally:
        sys.argv = old_argv
    wall = time.perf_counter() - t0

    window = [j for j in captured["jobs"] if first <= j["id"] <= last]
    done = [j["jct_s"] for j in window if j["jct_s"] is not None]
    mean = sum(done) / len(done) if done else None
    out = {
        "source": "gavel (original Python simulator, unmodified): "
                  "simulate_scheduler_with_generated_jobs.py",
        "argv": argv[1:], "policy": args.policy, "seed": args.seed,
        "jobs_per_hour": args.jobs_per_hour, "cluster_spec": args.cluster_spec,
        "window": [first, last], "window_finished": len(done),
        "mean_jct_s": mean, "end_s": captured.get("end_s"),
        "lease_extensions": list(captured.get("lease_ext", (0, 0))),
        "solves": {"lp": cvxpy.stats["lp"], "socp": cvxpy.stats["socp"],
                   "seconds": round(cvxpy.stats["seconds"], 3),
                   "status": dict(sorted(cvxpy.stats["status"].items()))},
        "kkt": dict(cvxpy.stats["kkt"]),
        "allocations_computed": captured["n_alloc"],
        "wall_s": round(wall, 1),
        "jobs": captured["jobs"],
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
        f.write("\n")
    os.replace(tmp, args.out)
    print("%s %.2f jobs/h seed %d: window %d/%d finished, mean JCT %.1f s (%.2f h), "
          "%d jobs generated, %d LP solves, %.0f s wall"
          % (args.policy, args.jobs_per_hour, args.seed, len(done), len(window),
             mean or 0, (mean or 0) / 3600, len(captured["jobs"]),
             cvxpy.stats["lp"], wall))


if __name__ == "__main__":
    main()
