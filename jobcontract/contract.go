package jobcontract

import "strconv"

// Environment variables the profiler sets for every point.
const (
	// EnvMetricsFile names the file the job appends its metrics stream to.
	EnvMetricsFile = "SYNERGY_METRICS_FILE"
	// EnvPoint is a label of the point ("cpus=2 mem=1GiB") for the job's logs.
	EnvPoint = "SYNERGY_POINT"
	// EnvCheckpointDir names the directory a preemptible job saves its
	// checkpoint to and resumes from (docs/job-contract.md, "Checkpoint and
	// resume").
	EnvCheckpointDir = "SYNERGY_CHECKPOINT_DIR"
	// EnvRequeue says what a preemptible job asks of Slurm after saving on
	// SIGUSR1: "requeue", "hold" or "none".
	EnvRequeue = "SYNERGY_REQUEUE"
)

// Names of the flags the profiler appends to the job's command (without
// their leading "--").
const (
	FlagBatch         = "batch"
	FlagWorkers       = "workers"
	FlagMaxIterations = "max-iterations"
	FlagData          = "data"
	FlagSyntheticData = "synthetic-data"
)

// Point is what the profiler tells a job about one run.
type Point struct {
	Batch         int
	Workers       int
	MaxIterations int
	DataDir       string
	// Synthetic asks for the step-only run: no data path, synthetic batches.
	Synthetic bool
}

// Args returns the contract flags for p, to append after the job's own
// arguments so that they win: "--batch N --workers N --max-iterations N
// --data DIR", preceded by "--synthetic-data" for a synthetic run.
func (p Point) Args() []string {
	var a []string
	if p.Synthetic {
		a = append(a, "--"+FlagSyntheticData)
	}
	return append(a,
		"--"+FlagBatch, strconv.Itoa(p.Batch),
		"--"+FlagWorkers, strconv.Itoa(p.Workers),
		"--"+FlagMaxIterations, strconv.Itoa(p.MaxIterations),
		"--"+FlagData, p.DataDir,
	)
}
