// Package joint is the joint policy (issue 14, item 6; issue 32, item 2):
// it chooses a job's GPU type, CPUs and memory together. Gavel picks GPU
// types but gives every job its type's GPU-proportional CPUs and memory;
// Synergy gives CPUs and memory by each job's sensitivity but sees one GPU
// type. Here a job's throughput on a GPU type is its Gavel throughput (the
// throughputs file's rate, taken as its rate at its ideal CPUs and memory)
// times its sensitivity matrix's value at the CPUs and memory it holds there,
// relative to its ideal (Factor).
//
// It plugs into the round mechanism of scheduler/gavel (Plugins): the joint
// policy is Gavel's max_min_fairness_perf over those throughputs at the CPUs
// and memory TUNE guarantees on each type, and every round a Shaper gives the
// round's jobs their CPUs and memory on their servers (Synergy's TUNE, or the
// GPU-proportional share for Gavel's own policies) and scales their rates.
// Synergy's strategies run in the same mechanism under Synergy's FIFO, blind
// to GPU types, so one `synergy simulate` prints the three side by side.
// Choose is the same rule for one queue (`synergy schedule` on a typed
// cluster). See docs/joint.md.
package joint
