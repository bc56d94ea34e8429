"""Draws jobs with Gavel's OWN generator (utils.generate_job, and the
inter-arrival draw of Scheduler._sample_arrival_time_delta) with the
random streams Scheduler.simulate uses (job parameters: Random(seed+2),
arrivals: Random(seed+3), SLOs: Random(seed+6)), and writes them as JSON
for generator_test.go. Run with /usr/bin/python3 and GAVEL_DIR set to a
Gavel checkout; our throughputs.json (made-up numbers) is the input."""
import json, math, os, random, sys

sys.path.insert(0, os.path.join(os.environ["GAVEL_DIR"], "scheduler"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "shim", "stubs"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "shim"))
import utils  # Gavel's

tp = utils.read_all_throughputs_json_v2("throughputs.json")
runs = []
for seed, lam, multi_gpu, multi_pri, slo, n in [(0, 3600 / 4.0, False, False, False, 60),
                                                (1, 3600 / 2.5, True, True, True, 60),
                                                (2, 0.0, True, False, False, 40)]:
    job_rng, arr_rng, slo_rng = random.Random(), random.Random(), random.Random()
    job_rng.seed(seed + 2); arr_rng.seed(seed + 3); slo_rng.seed(seed + 6)
    t = 0.0
    jobs = []
    for _ in range(n):
        j = utils.generate_job(throughputs=tp, reference_worker_type="v100", rng=job_rng,
                               generate_multi_gpu_jobs=multi_gpu,
                               generate_multi_priority_jobs=multi_pri,
                               SLO_rng=slo_rng if slo else None)
        jobs.append({"job_type": j.job_type, "scale_factor": j.scale_factor,
                     "total_steps": j.total_steps, "duration_s": j.duration,
                     "priority_weight": j.priority_weight,
                     "slo": -1 if j.SLO is None else j.SLO, "arrival_s": t})
        t = (0.0 if lam == 0 else -math.log(1.0 - arr_rng.random()) / (1.0 / lam)) + t
    runs.append({"seed": seed, "lam": lam, "multi_gpu": multi_gpu,
                 "multi_priority": multi_pri, "slos": slo, "jobs": jobs})
json.dump(runs, open("gavel_generated.json", "w"), indent=1)
