// Package scheduler owns the cluster model and the per-round placement of
// GPU jobs with CPU and memory, after Synergy (OSDI'22, msr-fiddle/synergy
// simulator/). A Cluster is servers with GPUs, CPUs and memory (bytes) in
// racks; a Job carries its GPU demand, iterations and its sensitivity (a
// per-GPU matrix normalised to the GPU-proportional share, plus the four
// scalars Synergy's heuristics read: ideal CPUs and memory per GPU, the
// speed-up there and the fair-share iteration time). Jobs come from the
// Catalog: the model zoo's, or a profile's read at the cluster's fair share
// (JobFromProfile). Each round a Policy (FIFO, SRTF, LAS, FTF) orders the
// runnable jobs and a Strategy (fair, greedy, tune, and more) places them
// on a Round, the free resources of the cluster; every placement or refusal
// is a Decision that says why, down to "cpu: need 9, free 4 on server-3".
// Strategies and policies are registries: each is listed once, by the name
// its Name method gives, with a line of help (NewStrategy, StrategyNames,
// StrategyHelp; NewPolicy, PolicyNames, PolicyHelp).
//
// PlaceQueue is the use case that `synergy schedule` and the engine bridges
// (Slurm, Kubernetes) share: given a Queue — a cluster, what is already in
// use per server (Usage, by server name), the queued jobs, a strategy and a
// policy (nil: FIFO) — it reserves what is in use, offers the jobs in the
// policy's order (then the strategy's own, for drf and tetris) to the
// strategy on what is free, and returns a QueuePlan: one JobOutcome per job
// saying whether it is placed, on which servers by name with how many GPUs,
// CPUs and bytes, the GPU-proportional share for comparison, the predicted
// speed-up, and for a waiting job the Shortfalls (resource, need, free,
// server) and a one-line Reason. Same queue, same plan. Usage that does not
// fit is an *InUseError naming the entry.
//
// The discrete-event simulator that drives rounds over a workload lives in
// scheduler/sim.
package scheduler
