// Package simcore is the simulation core that Synergy's simulator
// (scheduler/sim) and Gavel's (scheduler/gavel, and the joint policy through
// it) plug into. Loop runs a run's rounds — the order of the phases (over?,
// advance, admit, round), the clock (Clock: the loop moves it, forward
// only, to the times the phases name), cancellation, the round count, the limits
// (rounds, simulated time) and a stalled clock (ErrStalled) — with each engine's phases behind the Rounds
// interface, as kube-scheduler's framework runs its plugins; Arrivals brings
// a workload's jobs in, read one ahead; WindowCount tracks the window of job
// ids a run reports on and ends at (Window); and Result is the one result
// type both engines return (per-job records, the JCT distribution, makespan,
// end and utilisation, with each family's extras as optional fields; its
// Tally computes the common figures from the records), with
// the sweep's Point and Run that carry it. It is standard library only, so
// that both engines, the CLI and report import it and it imports none of
// them.
package simcore
