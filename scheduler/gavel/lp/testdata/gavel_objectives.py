#!/usr/bin/env python3
"""Optimal objective values of Gavel's own policy code on small instances (test fixtures).

Runs the unmodified policies of a Gavel checkout (scheduler/policies/*.py) with the cvxpy shim of
scheduler/gavel/testdata/reference/shim (cvxopt's interior-point conelp) and writes, per instance,
the inputs and the objective that Gavel's returned allocation reaches, recomputed here from the
policy's formula. Deterministic: the instances come from a fixed-seed generator.

Usage: /usr/bin/python3 gavel_objectives.py /path/to/gavel > gavel_objectives.json
Needs python3-numpy python3-scipy python3-cvxopt (Debian 12).
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "..", "..", "testdata", "reference", "shim")
GAVEL = sys.argv[1]
sys.path.insert(0, os.path.join(GAVEL, "scheduler", "policies"))
sys.path.insert(0, os.path.join(GAVEL, "scheduler"))
sys.path.insert(0, os.path.abspath(SHIM))

import max_min_fairness  # noqa: E402  (Gavel's)
import finish_time_fairness  # noqa: E402
import min_total_duration  # noqa: E402
import max_sum_throughput  # noqa: E402

TYPES = ["v100", "p100", "k80"]


def instance(rng, n, workers):
    jobs = []
    for m in range(n):
        k80 = 0.2 + rng.random() * 5
        jobs.append({
            "id": m,
            "throughput": [k80 * (0.7 + rng.random() * 10), k80 * (1 + rng.random() * 4), k80],
            "scale_factor": rng.choice([1, 1, 1, 1, 2, 4, 8]),
            "priority_weight": rng.choice([1, 1, 1, 1, 5]),
            "remaining_steps": 1000 + rng.random() * 1e6,
            "time_since_start": rng.random() * 1e5,
        })
    return {"types": TYPES, "workers": workers, "jobs": jobs}


def gavel_inputs(inst):
    tput = {j["id"]: {t: j["throughput"][i] for i, t in enumerate(TYPES)} for j in inst["jobs"]}
    sf = {j["id"]: j["scale_factor"] for j in inst["jobs"]}
    pw = {j["id"]: j["priority_weight"] for j in inst["jobs"]}
    rem = {j["id"]: j["remaining_steps"] for j in inst["jobs"]}
    tss = {j["id"]: j["time_since_start"] for j in inst["jobs"]}
    spec = {t: inst["workers"][i] for i, t in enumerate(TYPES)}
    return tput, sf, pw, rem, tss, spec


def matrix(inst, alloc):
    return [[float(alloc[j["id"]][t]) for t in TYPES] for j in inst["jobs"]]


def run(policy, inst):
    tput, sf, pw, rem, tss, spec = gavel_inputs(inst)
    if policy == "max_min_fairness_perf":
        a = max_min_fairness.MaxMinFairnessPolicyWithPerf("ECOS").get_allocation(tput, sf, pw, spec)
    elif policy == "max_min_fairness":
        a = max_min_fairness.MaxMinFairnessPolicy("ECOS").get_allocation(tput, sf, pw, spec)
    elif policy == "finish_time_fairness_perf":
        a = finish_time_fairness.FinishTimeFairnessPolicyWithPerf("ECOS").get_allocation(
            tput, sf, pw, tss, rem, spec)
    elif policy == "finish_time_fairness":
        a = finish_time_fairness.FinishTimeFairnessPolicy("ECOS").get_allocation(
            tput, sf, pw, tss, rem, spec)
    elif policy == "min_total_duration_perf":
        a = min_total_duration.MinTotalDurationPolicyWithPerf("ECOS").get_allocation(tput, sf, rem, spec)
    elif policy == "min_total_duration":
        a = min_total_duration.MinTotalDurationPolicy("ECOS").get_allocation(tput, sf, rem, spec)
    elif policy == "max_sum_throughput_perf":
        a = max_sum_throughput.ThroughputSumWithPerf("ECOS").get_allocation(tput, sf, spec)
    return matrix(inst, a)


def main():
    rng = random.Random(20201104)
    policies = ["max_min_fairness", "max_min_fairness_perf", "finish_time_fairness",
                "finish_time_fairness_perf", "min_total_duration", "min_total_duration_perf",
                "max_sum_throughput_perf"]
    out = []
    for n, workers in [(3, [1, 1, 1]), (6, [2, 2, 2]), (10, [4, 4, 4]), (16, [8, 16, 24]), (24, [2, 3, 6])]:
        inst = instance(rng, n, workers)
        res = {}
        for pol in policies:
            res[pol] = run(pol, inst)
        out.append({"instance": inst, "gavel_allocations": res})
    json.dump({"generator": "gavel_objectives.py", "gavel_commit": "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c",
               "solver": "cvxpy shim (cvxopt conelp)", "cases": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
