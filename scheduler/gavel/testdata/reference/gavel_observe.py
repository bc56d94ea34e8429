"""Observers for Gavel's Scheduler (our code): wrap Scheduler._compute_allocation
to record what the policy was given and what it returned, so that our
policies can be run on exactly Gavel's inputs (cmd: scripts/gavel-alloc-compare.sh).

A recorded allocation is one JSON object per line:
  {"n": k, "t": seconds, "types": [...], "workers": [...],
   "jobs": [{"id", "sf", "pw", "remaining", "since_start", "tput": [...]}],
   "X": {"id": [...]}}
(single jobs only; pair entries of packing policies are not recorded).
"""

import json
import time


def install_alloc_observer(scheduler, captured, dump_path=None, dump_n=0, dump_from=0.0,
                           progress=None):
    orig = scheduler.Scheduler._compute_allocation
    captured.setdefault("n_alloc", 0)
    captured.setdefault("dumped", 0)
    t0 = time.perf_counter()

    def observed(self, state=None):
        if state is None:
            state = self._get_allocation_state()
        alloc = orig(self, state)
        captured["n_alloc"] += 1
        now = float(self.get_current_timestamp())
        if progress and captured["n_alloc"] % 20 == 0:
            with open(progress, "a") as f:
                f.write("%.0f s wall: t=%.1f h, %d jobs generated, %d active, "
                        "%d allocations\n" % (time.perf_counter() - t0, now / 3600,
                                              len(getattr(self, "_all_jobs", [])),
                                              len(alloc), captured["n_alloc"]))
        if dump_path and now >= dump_from and captured["dumped"] < dump_n:
            captured["dumped"] += 1
            types = sorted(state["cluster_spec"])
            rec = {"n": captured["n_alloc"], "t": now, "types": types,
                   "workers": [state["cluster_spec"][w] for w in types], "jobs": [], "X": {}}
            for jid in sorted(state["scale_factors"]):
                i = jid[0]
                rec["jobs"].append({
                    "id": i, "sf": state["scale_factors"][jid],
                    "pw": state["priority_weights"][jid],
                    "remaining": float(state["num_steps_remaining"][jid]),
                    "since_start": float(state["times_since_start"][jid]),
                    "tput": [float(state["throughputs"][jid][w]) for w in types]})
            for jid, row in alloc.items():
                if not jid.is_pair():
                    rec["X"][str(jid[0])] = [float(row.get(w, 0.0)) for w in types]
            with open(dump_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        return alloc

    scheduler.Scheduler._compute_allocation = observed
