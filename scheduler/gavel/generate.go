package gavel

import (
	"fmt"
	"math"
)

// GeneratorConfig is Gavel's workload generator's options.
type GeneratorConfig struct {
	Seed uint64
	// MeanInterarrivalS is Gavel's lam (3600 / jobs per hour); 0 makes a
	// static workload (every job at t = 0).
	MeanInterarrivalS float64
	// NumJobs stops the generator after this many jobs (static workloads;
	// 0: unbounded, for a continuous run ended by a window).
	NumJobs       int
	MultiGPU      bool    // scale factors 1/2/4/8 at 70/10/15/5 %
	MultiPriority bool    // priority 5 for 20 % of jobs
	SLOs          bool    // SLO 1.2×/2×/10× of the reference duration, 1/3 each
	FixedDuration float64 // seconds on the reference type, instead of the Philly-derived draw
	// ReferenceType is the type durations are measured on (Gavel: v100).
	ReferenceType string
}

// Generator is Gavel's utils.generate_job with Scheduler.simulate's
// random streams: job parameters from random.Random(seed+2), arrivals from
// random.Random(seed+3), SLOs from random.Random(seed+6), drawn in Gavel's
// order, so a seed gives Gavel's workload.
type Generator struct {
	cfg       GeneratorConfig
	tp        *Throughputs
	jobs, arr *PyRandom
	slo       *PyRandom
	next      float64
	n         int
}

// NewGenerator checks the options against the throughputs.
func NewGenerator(cfg GeneratorConfig, tp *Throughputs) (*Generator, error) {
	if cfg.ReferenceType == "" {
		cfg.ReferenceType = "v100"
	}
	ref, ok := tp.Isolated[cfg.ReferenceType]
	if !ok {
		return nil, fmt.Errorf("generator: throughputs have no reference type %q", cfg.ReferenceType)
	}
	for _, t := range Templates {
		for _, sf := range []int{1, 2, 4, 8} {
			if sf > 1 && (!cfg.MultiGPU || !t.Distributed) {
				continue
			}
			if v, ok := ref[JobType{t.Model, sf}]; !ok || v <= 0 {
				return nil, fmt.Errorf("generator: throughputs have no positive %q throughput for %s (the generator draws Gavel's 26 templates)", cfg.ReferenceType, JobType{t.Model, sf})
			}
		}
	}
	if cfg.MeanInterarrivalS < 0 || math.IsNaN(cfg.MeanInterarrivalS) {
		return nil, fmt.Errorf("generator: mean inter-arrival %v s: must be ≥ 0", cfg.MeanInterarrivalS)
	}
	if cfg.MeanInterarrivalS == 0 && cfg.NumJobs <= 0 {
		return nil, fmt.Errorf("generator: a static workload needs a number of jobs")
	}
	g := &Generator{cfg: cfg, tp: tp, jobs: NewPyRandom(cfg.Seed + 2), arr: NewPyRandom(cfg.Seed + 3)}
	if cfg.SLOs {
		g.slo = NewPyRandom(cfg.Seed + 6)
	}
	return g, nil
}

// NumJobs is the configured number of jobs (0: unbounded).
func (g *Generator) NumJobs() int { return g.cfg.NumJobs }

// Generated is how many jobs Next has returned.
func (g *Generator) Generated() int { return g.n }

// NextArrival is the arrival time of the job Next returns next.
func (g *Generator) NextArrival() float64 { return g.next }

// Next draws the next job and its successor's arrival time.
func (g *Generator) Next() Job {
	j := g.job()
	j.ArrivalS = g.next
	g.n++
	delta := 0.0
	if g.cfg.MeanInterarrivalS != 0 {
		rate := 1.0 / g.cfg.MeanInterarrivalS
		delta = -math.Log(1.0-g.arr.Random()) / rate
	}
	g.next = delta + g.next
	return j
}

// Take draws n jobs.
func (g *Generator) Take(n int) []Job {
	out := make([]Job, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

func (g *Generator) job() Job {
	rng := g.jobs
	sf := 1
	switch r := rng.Uniform(0, 1); {
	case 0.7 <= r && r <= 0.8:
		sf = 2
	case 0.8 <= r && r <= 0.95:
		sf = 4
	case 0.95 <= r:
		sf = 8
	}
	run := g.cfg.FixedDuration
	if run == 0 {
		if rng.Random() >= 0.8 {
			run = 60 * math.Pow(10, rng.Uniform(3, 4))
		} else {
			run = 60 * math.Pow(10, rng.Uniform(1.5, 3))
		}
	}
	if !g.cfg.MultiGPU {
		sf = 1
	}
	var t Template
	for {
		t = Templates[rng.Below(len(Templates))]
		if sf == 1 || t.Distributed {
			break
		}
	}
	j := Job{JobType: t.Model, Command: t.Command, WorkingDir: t.WorkingDir, NumStepsArg: t.NumStepsArg,
		NeedsDataDir: t.NeedsDataDir, ScaleFactor: sf, PriorityWeight: 1, SLO: -1, DurationS: run}
	j.TotalSteps = run * g.tp.Isolated[g.cfg.ReferenceType][j.Key()]
	if g.cfg.MultiPriority {
		if r := rng.Uniform(0, 1); 0 <= r && r <= 0.2 {
			j.PriorityWeight = 5
		}
	}
	if g.slo != nil {
		switch r := g.slo.Uniform(0, 1); {
		case r < 0.33:
			j.SLO = 1.2
		case r < 0.67:
			j.SLO = 2
		default:
			j.SLO = 10
		}
	}
	return j
}
