// Package simcore holds what Synergy's simulator (scheduler/sim) and Gavel's
// (scheduler/gavel) share: the window of job ids a run reports on and may end
// at (Window), and the one result type both return (Result: per-job records,
// the JCT distribution, makespan, end and utilisation, with each family's
// extras as optional fields). It is standard library only, so that both
// engines, the CLI and report import it and it imports none of them.
package simcore
