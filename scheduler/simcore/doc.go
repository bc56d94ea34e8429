// Package simcore holds what Synergy's simulator (scheduler/sim) and Gavel's
// (scheduler/gavel) share: the window of job ids a run reports on and may end
// at (Window). It is standard library only, so that both engines and the CLI
// import it and it imports none of them.
package simcore
