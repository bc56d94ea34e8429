package gavel

// Limits on one Gavel-mode simulation: far above Gavel's studies (108 GPUs,
// runs of a few thousand jobs) and this repository's 10,000-GPU point, low
// enough that a typo (a cluster spec of 1e9 GPUs, --num-jobs 1e7) fails at
// once naming the field or flag instead of allocating until the process is
// killed. The engine keeps every job's record (about 200 bytes with its
// state), so MaxJobs is a few hundred MB at most. docs/gavel.md lists them.
const (
	// MaxGPUs caps a cluster's GPUs (all types together): the engine
	// makes a worker, a server slot and a busy counter per GPU.
	MaxGPUs = 1_000_000
	// MaxJobs caps the jobs of one run: a trace's lines, --num-jobs, and
	// the arrivals of a continuous run (one that reaches it without
	// finishing its window fails, naming --max-hours).
	MaxJobs = 1_000_000
	// MaxArrivalS caps a trace's arrival times (about 300 years): the
	// engine's clock and the generator's stay far inside a float64's
	// exact integers.
	MaxArrivalS = 1e10
	// MaxSteps caps a trace job's total_steps (2^53: exact in a float64).
	MaxSteps = 1 << 53
)
