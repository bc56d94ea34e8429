// Package pool runs the runs of a simulation sweep on a bounded number of
// goroutines with one set of rules for errors and cancellation, shared by
// Synergy's sweep (scheduler/sim) and Gavel's (scheduler/gavel): results
// stay in index order whatever the parallelism, the first failed run stops
// the sweep, and a cancelled context keeps the runs that finished.
package pool
