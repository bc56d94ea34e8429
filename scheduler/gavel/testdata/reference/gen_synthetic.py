#!/usr/bin/env python3
"""Write synthetic inputs in Gavel's formats: a throughputs JSON and two traces.

Our own code and our own numbers (synergy project): no value here is taken
from Gavel's data files.  The formats are Gavel's so that its original
simulator reads them unmodified:

  throughputs.json  worker type -> "('<model>', <scale factor>)" ->
                    {"null": isolated steps/s,
                     "('<other model>', <same scale factor>)":
                         [steps/s of this job, steps/s of the partner]}
                    Multi-GPU values are aggregate steps/s over all GPUs.
  *.trace           one job per line, 10 tab-separated fields: job_type,
                    command, working_directory, num_steps_arg,
                    needs_data_dir (0/1), total_steps, scale_factor,
                    priority_weight, SLO (-1 = none), arrival_time_s.

Outputs (deterministic for a given --seed; rerunning rewrites them
byte-identically):
  synthetic/throughputs.json   3 GPU types (v100, p100, k80), 10 models,
                               6 of them also at scale factors 2, 4, 8
  synthetic/continuous.trace   100 jobs, Poisson arrivals (mean 8 min apart),
                               scale factors 1/2/4/8 at 70/10/15/5 %, 15 %
                               of jobs at priority weight 5
  synthetic/static.trace       60 jobs, all at t = 0, scale factors as above,
                               priority weight 1

Usage: python3 gen_synthetic.py [--seed 14] [--out DIR]
"""

import argparse
import json
import math
import os
import random

# name, batch size, V100 steps/s at one GPU, P100/V100 and K80/V100 speed
# ratios, multi-GPU scaling efficiency per doubling (None: single GPU only).
# The spread mirrors what real clusters show: K80/V100 from 0 (does not fit
# in K80 memory) through 1/12 to 1.3 (a model that is faster on the K80).
MODELS = [
    ("synth-cnn-s", 64, 20.0, 0.55, 0.12, 0.90),
    ("synth-cnn-l", 128, 5.0, 0.45, 0.0, 0.85),
    ("synth-rnn", 32, 12.0, 0.70, 0.35, 0.80),
    ("synth-transformer", 256, 8.0, 0.50, 0.18, 0.90),
    ("synth-rec", 1024, 30.0, 1.10, 1.30, None),
    ("synth-rl", 1, 50.0, 0.90, 0.60, None),
    ("synth-gan", 1, 2.5, 0.40, 0.11, None),
    ("synth-lm", 20, 15.0, 0.60, 0.25, 0.75),
    ("synth-seg", 8, 3.0, 0.35, 0.085, None),
    ("synth-asr", 16, 6.0, 0.50, 0.20, 0.70),
]
WORKER_TYPES = ["v100", "p100", "k80"]
SCALE_FACTORS = [1, 2, 4, 8]
# Slower GPUs lose less to communication when scaled out.
EFFICIENCY_BONUS = {"v100": 0.0, "p100": 0.03, "k80": 0.06}


def model_name(name, batch):
    return "%s (batch size %d)" % (name, batch)


def key(name, batch, sf):
    return "('%s', %d)" % (model_name(name, batch), sf)


def isolated(model, wt, sf):
    name, batch, v100, p_ratio, k_ratio, eff = model
    base = {"v100": v100, "p100": v100 * p_ratio, "k80": v100 * k_ratio}[wt]
    if sf == 1:
        return round(base, 6)
    e = min(0.98, eff + EFFICIENCY_BONUS[wt])
    return round(base * sf * e ** math.log2(sf), 6)


def throughputs(seed):
    rng = random.Random(seed)
    # One co-location slowdown per (worker type, ordered pair of models),
    # the same at every scale factor: the fraction of its isolated speed a
    # model keeps next to its partner.
    keep = {}
    for wt in WORKER_TYPES:
        for a in MODELS:
            for b in MODELS:
                keep[(wt, a[0], b[0])] = round(rng.uniform(0.35, 0.95), 3)
    out = {}
    for wt in WORKER_TYPES:
        out[wt] = {}
        for sf in SCALE_FACTORS:
            models = [m for m in MODELS if sf == 1 or m[5] is not None]
            for a in models:
                entry = {"null": isolated(a, wt, sf)}
                for b in models:
                    ta, tb = isolated(a, wt, sf), isolated(b, wt, sf)
                    entry[key(b[0], b[1], sf)] = [
                        round(ta * keep[(wt, a[0], b[0])], 6),
                        round(tb * keep[(wt, b[0], a[0])], 6)]
                out[wt][key(a[0], a[1], sf)] = entry
    return out


def scale_factor(rng):
    r = rng.random()
    if r < 0.70:
        return 1
    if r < 0.80:
        return 2
    if r < 0.95:
        return 4
    return 8


def duration_s(rng):
    # Exclusive V100 time, log-uniform over 12 min .. 6 h (the physical
    # cluster traces Gavel ships are in this range too).
    return 3600 * 10 ** rng.uniform(math.log10(0.2), math.log10(6.0))


def make_jobs(rng, n, tput, arrivals, priority_share):
    lines = []
    for i in range(n):
        sf = scale_factor(rng)
        choices = [m for m in MODELS if sf == 1 or m[5] is not None]
        m = choices[rng.randrange(len(choices))]
        steps = int(duration_s(rng) * tput["v100"][key(m[0], m[1], sf)]["null"])
        prio = 5 if rng.random() < priority_share else 1
        cmd = "python3 train.py --model %s --batch_size %d" % (m[0], m[1])
        lines.append("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%f\t%f\n" % (
            model_name(m[0], m[1]), cmd, "synthetic/" + m[0], "--num_steps",
            0, max(steps, 1), sf, prio, -1.0, arrivals[i]))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "synthetic"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    tput = throughputs(args.seed)
    with open(os.path.join(args.out, "throughputs.json"), "w") as f:
        json.dump(tput, f, indent=1)
        f.write("\n")

    rng = random.Random(args.seed + 1)
    t, arrivals = 0.0, []
    for _ in range(100):
        arrivals.append(round(t, 3))
        t += rng.expovariate(1.0 / 480.0)
    with open(os.path.join(args.out, "continuous.trace"), "w") as f:
        f.writelines(make_jobs(rng, 100, tput, arrivals, 0.15))

    rng = random.Random(args.seed + 2)
    with open(os.path.join(args.out, "static.trace"), "w") as f:
        f.writelines(make_jobs(rng, 60, tput, [0.0] * 60, 0.0))


if __name__ == "__main__":
    main()
