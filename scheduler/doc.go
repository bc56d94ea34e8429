// Package scheduler owns the cluster model and the per-round placement of
// GPU jobs with CPU and memory, after Synergy (OSDI'22, msr-fiddle/synergy
// simulator/). A Cluster is servers with GPUs, CPUs and memory (bytes) in
// racks; a Job carries its GPU demand, iterations and its sensitivity (a
// per-GPU matrix normalised to the GPU-proportional share, plus the four
// scalars Synergy's heuristics read: ideal CPUs and memory per GPU, the
// speed-up there and the fair-share iteration time). Each round a Policy
// (FIFO, SRTF, LAS, FTF) orders the runnable jobs and a Strategy (fair,
// greedy, tune, and more) places them on a Round, the free resources of the
// cluster; every placement or refusal is a Decision that says why, down to
// "cpu: need 9, free 4 on server-3". Jobs come from the Catalog: the model
// zoo's, or a profile's read at the cluster's fair share (JobFromProfile).
// The discrete-event simulator that drives rounds over a workload lives in
// scheduler/sim.
package scheduler
