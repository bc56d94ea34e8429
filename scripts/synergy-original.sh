#!/usr/bin/env bash
# Runs Synergy's own simulator (msr-fiddle/synergy, simulator/runner.py,
# unmodified) on a recorded trace and prints "id arrival_s finish_s" per job,
# the figures scheduler/sim's replay tests compare with.
#
#   scripts/synergy-original.sh SYNERGY_CHECKOUT TRACE POLICY fair|tune [static]
#
# POLICY is the original's FIFO, SRTF, LAS or FTF; placement is off, on the
# original's default 128-GPU cluster, as `synergy simulate --trace`. It needs
# Debian's python3-numpy and python3-pandas under /usr/bin/python3; the
# deployment-only imports (numa, grpc and its generated modules, cvxpy,
# matplotlib) are replaced by inert stand-ins, as nothing of them runs in a
# simulation.
# Example (testdata/synergy_static_100job.original):
#   scripts/synergy-original.sh ~/synergy-orig simulator/deploy_trace/static_100job_6_3_1100.0 FIFO tune static
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,16p "$0" >&2; exit 2; }
orig=$(cd "$1" && pwd) trace=$2 policy=$3 mode=$4 static=${5:-}
[ -f "$orig/simulator/runner.py" ] || { echo "synergy-original: $orig/simulator/runner.py not found" >&2; exit 2; }
case $mode in fair) ft="1 0" ;; tune) ft="0 1" ;; *) echo "synergy-original: mode $mode: want fair or tune" >&2; exit 2 ;; esac
case $static in "") st=0 ;; static) st=1 ;; *) echo "synergy-original: $static: want static or nothing" >&2; exit 2 ;; esac
case $trace in /*) ;; *) trace=$orig/$trace ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stub='class _Any:
    def __getattr__(self, n): return _Any()
    def __call__(self, *a, **k): return _Any()
    def __mro_entries__(self, b): return (object,)
def __getattr__(n): return _Any()
'
for m in matplotlib matplotlib/pyplot matplotlib/dates cvxpy grpc google google/protobuf google/protobuf/struct_pb2 \
  worker_to_scheduler_pb2 worker_to_scheduler_pb2_grpc common_pb2 scheduler_to_worker_pb2 scheduler_to_worker_pb2_grpc \
  job_to_scheduler_pb2 job_to_scheduler_pb2_grpc; do
  mkdir -p "$work/stubs/$m" && printf '%s' "$stub" > "$work/stubs/$m/__init__.py"
done
cat > "$work/stubs/numa.py" <<'PY'
def get_max_node(): return 0
def node_to_cpus(n): return set(range(24))
def get_node_size(n): return (500 << 30, 500 << 30)
PY
cat > "$work/harness.py" <<'PY'
import collections, collections.abc
collections.Mapping = collections.abc.Mapping  # the original predates Python 3.10
import sys, random, logging
args, sys.argv = sys.argv[1:], ['runner.py']
logging.basicConfig(level=logging.WARNING)
import runner as R
trace, sched = args[0], args[1]
fair, tune, static = (a == '1' for a in args[2:5])
finish = {}
orig_finish = R.Runner.finish_job
def record(self, job):
    finish[job.job_id] = (job.job_arrival_time, self.time)
    orig_finish(self, job)
R.Runner.finish_job = record
random.seed(42)
r = R.Runner(cluster_job_log=None, scheduler=sched, jobs_per_hour=9.0, model_class_split=(20, 70, 10),
             placement=False, fair=fair, tune=tune, static=static, trace=trace, series_id_filter=(0, 100000))
r.run_simulation()
for i in sorted(finish):
    print(i, repr(finish[i][0]), repr(finish[i][1]))
PY
cd "$orig/simulator"
# shellcheck disable=SC2086
PYTHONPATH="$orig/simulator:$work/stubs" /usr/bin/python3 "$work/harness.py" "$trace" "$policy" $ft $st
