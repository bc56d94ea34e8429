"""Runs Gavel's OWN simulator (Scheduler.simulate with generated jobs, as
its simulate_scheduler_with_generated_jobs.py driver does) on our made-up
throughputs.json, and writes per-job arrival and JCT for generated_sim_test
in generate_test.go. Run with /usr/bin/python3 and GAVEL_DIR set."""
import contextlib, io, json, logging, os, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ["GAVEL_DIR"], "scheduler"))
sys.path.insert(0, os.path.join(here, "..", "reference", "shim", "stubs"))
sys.path.insert(0, os.path.join(here, "..", "reference", "shim"))
import scheduler, utils  # Gavel's
from job_id_pair import JobIdPair

logging.disable(logging.CRITICAL)

runs = []
for policy, lam, multi_gpu, multi_pri, first, last in [
        ("fifo_perf", 3600 / 0.6, True, True, 20, 59),
        ("isolated", 3600 / 0.6, True, True, 20, 59),
        ("fifo", 0.0, True, False, 0, 39)]:
    pol = utils.get_policy(policy, solver="ECOS", seed=0)
    s = scheduler.Scheduler(pol, throughputs_file=os.path.join(here, "throughputs.json"),
                            seed=0, time_per_iteration=360, simulate=True)
    window = set(JobIdPair(i, None) for i in range(first, last + 1))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        s.simulate({"v100": 8, "p100": 8, "k80": 16}, lam=lam, jobs_to_complete=window,
                   generate_multi_gpu_jobs=multi_gpu, generate_multi_priority_jobs=multi_pri,
                   num_total_jobs=(len(window) if lam == 0 else None),
                   num_gpus_per_server={"v100": 1, "p100": 1, "k80": 1})
        s.shutdown()
    jobs = []
    for j in sorted(s._per_job_start_timestamps):
        jct = s._job_completion_times.get(j)
        jobs.append({"id": j[0], "arrival_s": s._per_job_start_timestamps[j], "jct_s": jct})
    runs.append({"policy": policy, "lam": lam, "multi_gpu": multi_gpu, "multi_priority": multi_pri,
                 "window": [first, last], "jobs": jobs})
json.dump(runs, open(os.path.join(here, "gavel_simulated.json"), "w"), indent=1)
