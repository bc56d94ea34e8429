// Package sim is the discrete-event simulator behind `synergy simulate`: a
// virtual clock advanced in rounds (leases, default 300 s) with Synergy's
// semantics (msr-fiddle/synergy simulator/): at every round boundary all
// leases end, the policy orders the runnable jobs, the strategy re-packs
// them on an empty cluster through scheduler's own placement loop, and each
// placed job is credited at once floor(round / (iteration time /
// speed-up)) iterations, so jobs finish on round boundaries (Run: arrive,
// place, credit, retire, on simcore.Loop, the loop both engines share).
// Workloads come from Synergy's generator (seeded, one RNG for all
// randomness), a recorded trace CSV or a Philly job log, with jobs from
// scheduler's Catalog; results are summarised over a window of job ids (a
// simcore.Window: by default 4000–4999 for a generated workload, every job
// for a replay) as JCT mean/median/p95/p99, queueing delay, makespan and
// utilisation over time (a simcore.Result, the result type Gavel's engine
// returns too), and written as JSON. A sweep (Grid.Points, Sweep) runs
// strategy × policy × load × seed in parallel. The same configuration and
// seed give byte-identical results. docs/simulator.md records what matches
// the original and what we fixed.
package sim
