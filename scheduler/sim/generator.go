package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler"
)

// GeneratorConfig is Synergy's workload generator (jobs/workload.py with
// helpers/utils.py), the paper's continuous setting.
type GeneratorConfig struct {
	// JobsPerHour is the Poisson arrival rate.
	JobsPerHour float64
	// NumJobs stops the generator after this many jobs; 0 means no limit
	// (the simulator stops when the window's jobs have finished).
	NumJobs int
	// Split is the percentage of image, language and speech jobs
	// (default 20, 70, 10).
	Split [3]float64
	// MultiGPU draws GPU demands 1/2/4/8 with probabilities
	// 0.7/0.1/0.15/0.05 (Synergy's get_job_gpu_demand); otherwise every
	// job has one GPU.
	MultiGPU bool
	Seed     uint64
	// Models, when set, replaces the zoo's classes: jobs take these
	// catalog models round-robin (profiles have no class) and Split is
	// not used.
	Models []string
}

// Validate checks the generator settings; errors name the field.
func (c GeneratorConfig) Validate() error {
	if !(c.JobsPerHour > 0) || math.IsInf(c.JobsPerHour, 0) {
		return fmt.Errorf("jobs_per_hour = %v: need a positive number", c.JobsPerHour)
	}
	if c.JobsPerHour > MaxJobsPerHour {
		return fmt.Errorf("jobs_per_hour = %v: above %d, the most one simulation takes (MaxJobsPerHour)", c.JobsPerHour, MaxJobsPerHour)
	}
	if c.NumJobs < 0 {
		return fmt.Errorf("num_jobs = %d: must not be negative", c.NumJobs)
	}
	if c.NumJobs > MaxJobs {
		return fmt.Errorf("num_jobs = %d: above %d, the most jobs one simulation runs (MaxJobs)", c.NumJobs, MaxJobs)
	}
	sum := 0.0
	for i, p := range c.Split {
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return fmt.Errorf("split[%d] = %v: need a non-negative percentage", i, p)
		}
		sum += p
	}
	if math.Abs(sum-100) > 1e-6 {
		return fmt.Errorf("split = %v: percentages sum to %v, not 100", c.Split, sum)
	}
	return nil
}

// Generator draws jobs:
//   - inter-arrival ceil(Exp(JobsPerHour) hours in seconds);
//   - duration 60·10^U(1.5,3) s with probability 0.8, else 60·10^U(3,4) s
//     (Gavel-like: 31.6 min to 16.7 h, and 16.7 h to 6.9 days), iterations
//     = int(duration / the model's fair-share iteration time);
//   - class: the one furthest below its share of the jobs so far (the
//     original's ModelAssignment.OVERALL: deterministic, ties in image,
//     language, speech order), model round-robin within the class.
//
// One PCG stream seeded by Seed supplies all randomness; the original's
// Python random stream cannot be reproduced, so matching is by
// distribution.
type Generator struct {
	cfg     GeneratorConfig
	catalog *scheduler.Catalog
	rng     *rand.Rand
	id      int
	last    float64
	models  modelAssigner
	zoo     zooJobs
}

// NewCatalogGenerator validates cfg and starts a generator of zoo jobs,
// drawing cfg.Models from catalog (nil: the built-in zoo).
func NewCatalogGenerator(cfg GeneratorConfig, catalog *scheduler.Catalog) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	if len(cfg.Models) > 0 && catalog == nil {
		return nil, errors.New("generator: models given without a catalog")
	}
	for _, m := range cfg.Models {
		if _, err := catalog.Job(0, m, 0, 1, 1); err != nil {
			return nil, fmt.Errorf("generator: models: %w", err)
		}
	}
	g := &Generator{cfg: cfg, catalog: catalog, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed5eed)),
		models: newModelAssigner(), zoo: zooJobs{}}
	return g, nil
}

// Describe implements Source.
func (g *Generator) Describe() string {
	mg := "single-GPU"
	if g.cfg.MultiGPU {
		mg = "multi-GPU"
	}
	return fmt.Sprintf("generator: %v jobs/h, split %v/%v/%v, %s, seed %d", g.cfg.JobsPerHour, g.cfg.Split[0], g.cfg.Split[1], g.cfg.Split[2], mg, g.cfg.Seed)
}

// Next implements Source.
func (g *Generator) Next() (*scheduler.Job, bool) {
	if g.cfg.NumJobs > 0 && g.id >= g.cfg.NumJobs {
		return nil, false
	}
	hours := -math.Log(1-g.rng.Float64()) / g.cfg.JobsPerHour
	g.last += math.Ceil(hours * 3600)
	durationS := gavelDurationS(g.rng)
	gpus := 1
	if g.cfg.MultiGPU {
		switch u := g.rng.Float64(); {
		case u >= 0.95:
			gpus = 8
		case u >= 0.8:
			gpus = 4
		case u >= 0.7:
			gpus = 2
		}
	}
	var j *scheduler.Job
	var err error
	if len(g.cfg.Models) > 0 {
		model := g.cfg.Models[g.id%len(g.cfg.Models)]
		j, err = g.catalog.Job(g.id, model, g.last, 1, gpus)
		if err == nil {
			j.Iterations = int64(durationS / j.IterSeconds)
		}
	} else {
		j = g.zoo.job(g.id, g.models.next(g.cfg.Split), g.last, durationS, gpus)
	}
	if err != nil {
		panic(err) // models were checked in NewCatalogGenerator
	}
	if j.Iterations < 1 {
		j.Iterations = 1
	}
	g.id++
	return j, true
}

// zooJobs builds the jobs of zoo models from one template per model, so
// that a workload of millions of jobs looks each model up once and its
// jobs share one matrix (read-only).
type zooJobs map[string]*scheduler.Job

// job is a job of the named zoo model running durationS seconds at its
// fair-share iteration time (int(durationS / iteration time) iterations,
// as ZooJob is given them).
func (z zooJobs) job(id int, model string, arrivalS, durationS float64, gpus int) *scheduler.Job {
	t := z[model]
	if t == nil {
		var err error
		if t, err = scheduler.ZooJob(0, model, 0, 1, 1, nil); err != nil {
			panic(err) // the zoo's own names
		}
		z[model] = t
	}
	j := *t
	j.ID, j.ArrivalSeconds, j.GPUs, j.Iterations = id, arrivalS, gpus, int64(durationS/t.IterSeconds)
	return &j
}

// gavelDurationS draws a job duration in seconds as Synergy's
// get_gavel_like_iter does: 60·10^U(1.5,3) with probability 0.8 (31.6 min
// to 16.7 h), else 60·10^U(3,4) (16.7 h to 6.9 days).
func gavelDurationS(rng *rand.Rand) float64 {
	var exp float64
	if rng.Float64() >= 0.8 {
		exp = 3 + rng.Float64()
	} else {
		exp = 1.5 + 1.5*rng.Float64()
	}
	return 60 * math.Pow(10, exp)
}

// modelAssigner gives jobs zoo models as Synergy's generator does
// (ModelAssignment.OVERALL): the class (image, language, speech) furthest
// below its share of the split so far, ties in that order, then the
// class's models round-robin.
type modelAssigner struct {
	classes [3][]string // zoo model names per class
	count   [3]int      // jobs given each class so far
	rr      [3]int      // round-robin position within each class
}

func newModelAssigner() modelAssigner {
	var a modelAssigner
	for _, m := range zoo.All() {
		for k, c := range zoo.Classes() {
			if m.Class == c {
				a.classes[k] = append(a.classes[k], m.Name)
			}
		}
	}
	return a
}

// next returns the next job's model for a split in percent.
func (a *modelAssigner) next(split [3]float64) string {
	class := a.nextClass(split)
	names := a.classes[class]
	model := names[a.rr[class]%len(names)]
	a.rr[class]++
	a.count[class]++
	return model
}

func (a *modelAssigner) nextClass(split [3]float64) int {
	total := a.count[0] + a.count[1] + a.count[2]
	best, bestPri := -1, math.Inf(-1)
	for k, p := range split {
		if p == 0 {
			continue
		}
		pri := 0.0
		if total > 0 {
			pri = p/100 - float64(a.count[k])/float64(total)
		}
		if pri > bestPri {
			best, bestPri = k, pri
		}
	}
	return best
}
