#!/usr/bin/env python3
"""Print Markdown tables of the run_gavel.py results under a directory.

Our own code (synergy project).  Usage: summarize.py DIR  (DIR holds one
subdirectory per trace, each with <policy>.json files).
"""

import glob
import json
import os
import sys

ORDER = ["fifo", "fifo_perf", "isolated", "gandiva", "max_min_fairness",
         "max_min_fairness_perf", "min_total_duration",
         "min_total_duration_perf", "finish_time_fairness",
         "finish_time_fairness_perf"]


def rank(path):
    p = os.path.basename(path)[:-len(".json")]
    return (ORDER.index(p) if p in ORDER else len(ORDER), p)


def main():
    root = sys.argv[1]
    for tdir in sorted(d for d in glob.glob(os.path.join(root, "*"))
                       if os.path.isdir(d)):
        files = sorted(glob.glob(os.path.join(tdir, "*.json")), key=rank)
        if not files:
            continue
        runs = [json.load(open(f)) for f in files]
        r0 = runs[0]
        print("### %s (%s, %d jobs, cluster %s, seed %d, %d s rounds)\n" % (
            r0["trace"], r0["throughputs"], r0["num_jobs"], r0["cluster_spec"],
            r0["seed"], r0["round_s"]))
        print("| policy | finished | mean JCT (h) | makespan (h) | "
              "utilisation | lease ext. | solver | solves |")
        print("|---|---:|---:|---:|---:|---:|---|---:|")
        for r in runs:
            s = r["solves"]
            ext, opp = r["lease_extensions"]
            print("| %s | %d/%d | %.3f | %.3f | %.3f | %s | %s | %s |" % (
                r["policy"], r["num_finished"], r["num_jobs"],
                r["mean_jct_s"] / 3600, r["makespan_s"] / 3600,
                r["utilization"],
                "%.1f%%" % (100.0 * ext / opp) if opp else "-",
                r["solver"].replace(" (shim)", ""),
                s["lp"] + s["socp"] or "-"))
        print()


if __name__ == "__main__":
    main()
