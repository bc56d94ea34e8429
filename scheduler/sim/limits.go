package sim

// Limits on what one `synergy simulate` is asked to do: far above any real
// study (Synergy's runs are 5000-job windows; Philly's log holds about
// 117 000 jobs), low enough that a typo (--num-jobs 1e9) is refused at once
// with the limit named instead of running for days or exhausting memory.
// docs/simulator.md lists them.
const (
	// MaxJobs caps the jobs of one workload: a trace's rows, the
	// generator's --num-jobs. A job costs a few hundred bytes, so 10
	// million fit in a few GiB.
	MaxJobs = 10_000_000
	// MaxJobsPerHour caps a generator's arrival rate (--loads).
	MaxJobsPerHour = 100_000
	// MaxRuns caps the runs of one sweep (strategies × policies × loads ×
	// seeds).
	MaxRuns = 10_000
	// MinRoundSeconds and MaxRoundSeconds bound the round (--round):
	// Synergy's is 300 s.
	MinRoundSeconds = 1
	MaxRoundSeconds = 7 * 24 * 3600
)
