package scheduler

import (
	"fmt"
	"math"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Resources is an amount of GPUs, CPU cores and memory.
type Resources struct {
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{GPUs: r.GPUs + o.GPUs, CPUs: r.CPUs + o.CPUs, MemBytes: r.MemBytes + o.MemBytes}
}

// PerGPU is an amount of CPU and memory for one GPU.
type PerGPU struct {
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

// Times returns the resources of n GPUs at this per-GPU share.
func (p PerGPU) Times(n int) Resources {
	return Resources{GPUs: n, CPUs: p.CPUs * float64(n), MemBytes: p.MemBytes * float64(n)}
}

// Job is a training job as the scheduler sees it.
type Job struct {
	ID    int    `json:"id"`
	Model string `json:"model"`
	// Class is the model's class (image, language, speech) when known.
	Class string `json:"class,omitempty"`
	GPUs  int    `json:"gpus"`
	// Iterations is the total number of iterations to run.
	Iterations int64 `json:"iterations"`
	// ArrivalSeconds is when the job is submitted (virtual clock).
	ArrivalSeconds float64 `json:"arrival_s"`
	// IterSeconds is seconds per iteration at the GPU-proportional share.
	IterSeconds float64 `json:"iter_seconds"`
	// IdealCPUsPerGPU and IdealMemBytesPerGPU are the smallest per-GPU
	// allocation reaching Speedup.
	IdealCPUsPerGPU     float64 `json:"ideal_cpus_per_gpu"`
	IdealMemBytesPerGPU float64 `json:"ideal_mem_bytes_per_gpu"`
	// Speedup is the throughput at the ideal allocation relative to the
	// GPU-proportional share.
	Speedup float64 `json:"speedup"`
	// Matrix is the per-GPU throughput normalised to the GPU-proportional
	// share (1.0), when known. Fair, greedy and tune read only the scalars
	// above, as Synergy does; OPT reads the matrix.
	Matrix *sensitivity.Matrix `json:"-"`
	// Warnings say where the job's sensitivity had to be clamped.
	Warnings []string `json:"warnings,omitempty"`
	// IdealWhy says what the ideal allocation is and why, for a job read
	// from a profile (sensitivity.FairShareView.Why); empty for the zoo's
	// and a trace's, whose ideal is given.
	IdealWhy string `json:"ideal_why,omitempty"`
}

// Validate checks the fields a scheduler reads.
func (j *Job) Validate() error {
	switch {
	case j.GPUs < 1:
		return fmt.Errorf("job %d: gpus = %d: need at least 1", j.ID, j.GPUs)
	case j.Iterations < 1:
		return fmt.Errorf("job %d: iterations = %d: need at least 1", j.ID, j.Iterations)
	case !(j.IterSeconds > 0) || math.IsInf(j.IterSeconds, 0):
		return fmt.Errorf("job %d: iter_seconds = %v: need a positive number", j.ID, j.IterSeconds)
	case !(j.Speedup > 0) || math.IsInf(j.Speedup, 0):
		return fmt.Errorf("job %d: speedup = %v: need a positive number", j.ID, j.Speedup)
	case !(j.IdealCPUsPerGPU > 0) || math.IsInf(j.IdealCPUsPerGPU, 0):
		return fmt.Errorf("job %d: ideal_cpus_per_gpu = %v: need a positive number", j.ID, j.IdealCPUsPerGPU)
	case !(j.IdealMemBytesPerGPU > 0) || math.IsInf(j.IdealMemBytesPerGPU, 0):
		return fmt.Errorf("job %d: ideal_mem_bytes_per_gpu = %v: need a positive number", j.ID, j.IdealMemBytesPerGPU)
	case math.IsNaN(j.ArrivalSeconds) || math.IsInf(j.ArrivalSeconds, 0) || j.ArrivalSeconds < 0:
		return fmt.Errorf("job %d: arrival_s = %v: need a non-negative number", j.ID, j.ArrivalSeconds)
	}
	if j.Matrix != nil {
		if err := j.Matrix.Validate(); err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	return nil
}

// Shape is what a job's demand is fitted against: the cluster's per-server
// size and per-GPU fair share.
type Shape struct {
	PerServer Resources
	Fair      PerGPU
}

// ShapeOf returns the cluster's shape.
func ShapeOf(c *Cluster) Shape { return Shape{PerServer: c.PerServer(), Fair: c.FairShare()} }

// Demand is a job's ideal demand on a cluster shape: the total resources it
// asks for when placed at its best allocation, and the speed-up it gets
// there.
type Demand struct {
	Ideal   Resources
	Speedup float64
}

// IdealDemand is Synergy's add_synergy_profile (jobs/workload.py): the ideal
// demand is GPUs × ideal per-GPU share, capped at one server's CPUs and
// memory. A job larger than one server (more GPUs than a server holds) has
// each capped dimension set to its GPU-proportional amount and speed-up 1 —
// and since the original's storage-bandwidth dimension (62.5 MB/s per GPU
// on 500 MB/s servers) always caps for such jobs, every job wider than a
// server gets speed-up 1. A job capped on CPU within one server gets a
// speed-up on the straight line between fair share (1) and its ideal
// (Speedup), at the capped CPU count.
func IdealDemand(j *Job, s Shape) Demand {
	g := float64(j.GPUs)
	d := Demand{
		Ideal:   Resources{GPUs: j.GPUs, CPUs: g * j.IdealCPUsPerGPU, MemBytes: g * j.IdealMemBytesPerGPU},
		Speedup: j.Speedup,
	}
	wide := j.GPUs > s.PerServer.GPUs
	var cappedCPU, cappedMem bool
	d.Ideal.CPUs, cappedCPU = capAtServer(d.Ideal.CPUs, s.PerServer.CPUs, s.Fair.CPUs, g, wide)
	d.Ideal.MemBytes, cappedMem = capAtServer(d.Ideal.MemBytes, s.PerServer.MemBytes, s.Fair.MemBytes, g, wide)
	line := (cappedCPU || cappedMem) && !wide
	if wide {
		d.Speedup = 1
	}
	if line {
		idealCPU := g * j.IdealCPUsPerGPU
		fairCPU := g * s.Fair.CPUs
		if diff := idealCPU - fairCPU; diff != 0 {
			slope := (d.Speedup - 1) / diff
			d.Speedup = 1 + slope*(d.Ideal.CPUs-fairCPU)
		}
	}
	return d
}

// capAtServer caps one dimension of an ideal demand at the server's size,
// or, for a job of gpus GPUs wider than a server, at its GPU-proportional
// amount (fairPerGPU × gpus); capped says whether it did.
func capAtServer(ideal, server, fairPerGPU, gpus float64, wide bool) (v float64, capped bool) {
	switch {
	case !(ideal > server):
		return ideal, false
	case wide:
		return gpus * fairPerGPU, true
	}
	return server, true
}

// FairDemand is the GPU-proportional share of the job's GPUs.
func FairDemand(j *Job, s Shape) Resources { return s.Fair.Times(j.GPUs) }

// exceedsFair reports whether a demand asks for more than the GPU-
// proportional share in any dimension (Synergy's _make_fair_share test).
func exceedsFair(d Resources, gpus int, s Shape) bool {
	f := s.Fair.Times(gpus)
	return d.CPUs > f.CPUs || d.MemBytes > f.MemBytes
}
