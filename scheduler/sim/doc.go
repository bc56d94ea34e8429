// Package sim is the discrete-event simulator behind `synergy simulate`: a
// virtual clock advanced in rounds (leases, default 300 s) with Synergy's
// semantics (msr-fiddle/synergy simulator/): at every round boundary all
// leases end, the policy orders the runnable jobs, the strategy re-packs
// them on an empty cluster, and each placed job is credited at once
// floor(round / (iteration time / speed-up)) iterations, so jobs finish on
// round boundaries. Workloads come from Synergy's generator (seeded, one
// RNG for all randomness) or a recorded trace CSV; results are summarised
// over a window of job ids (JCT mean/median/p95/p99, queueing delay,
// makespan, utilisation over time) and written as JSON. The same
// configuration and seed give byte-identical results. docs/simulator.md
// records what matches the original and what we fixed.
package sim
