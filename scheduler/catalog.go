package scheduler

import (
	"errors"
	"fmt"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Catalog is the models jobs can name: the zoo, plus profiles added with
// AddProfile (named by their job name). The simulator's workloads,
// `synergy schedule` and the engine bridges build their jobs from it.
type Catalog struct {
	shape    Shape
	profiles map[string]*Job // templates
	order    []string
	matrices map[string]*sensitivity.Matrix
}

// NewCatalog starts a catalog holding the zoo, for jobs on a cluster of
// the given shape (profiles are normalised to its fair share).
func NewCatalog(shape Shape) *Catalog {
	return &Catalog{shape: shape, profiles: map[string]*Job{}, matrices: map[string]*sensitivity.Matrix{}}
}

// AddProfile adds a profile (the output of `synergy profile`) as a model
// named by its job name; it returns the job's warnings (clamping).
func (c *Catalog) AddProfile(p *sensitivity.Profile) ([]string, error) {
	name := p.Job.Name
	if name == "" {
		return nil, errors.New("profile: job.name is empty; jobs name their model by it")
	}
	if _, err := zoo.Lookup(name); err == nil {
		return nil, fmt.Errorf("profile %q: the name is a zoo model's", name)
	}
	if _, dup := c.profiles[name]; dup {
		return nil, fmt.Errorf("profile %q: given twice", name)
	}
	j, err := JobFromProfile(0, p, c.shape)
	if err != nil {
		return nil, err
	}
	c.profiles[name] = j
	c.order = append(c.order, name)
	return j.Warnings, nil
}

// Profiles lists the profile models in the order added.
func (c *Catalog) Profiles() []string { return append([]string(nil), c.order...) }

// Job builds a job of the named model (a profile's or the zoo's).
func (c *Catalog) Job(id int, model string, arrivalS float64, iterations int64, gpus int) (*Job, error) {
	if t, ok := c.profiles[model]; ok {
		j := *t
		j.ID, j.ArrivalSeconds, j.Iterations, j.GPUs = id, arrivalS, iterations, gpus
		j.Warnings = append([]string(nil), t.Warnings...)
		return &j, nil
	}
	return ZooJob(id, model, arrivalS, iterations, gpus, c.matrices)
}

// ZooJob builds a job of the named zoo model (models/zoo). matrices, when
// not nil, caches each model's matrix so that its jobs share one copy
// (read-only).
func ZooJob(id int, model string, arrivalS float64, iterations int64, gpus int, matrices map[string]*sensitivity.Matrix) (*Job, error) {
	m, err := zoo.Lookup(model)
	if err != nil {
		return nil, err
	}
	mx := matrices[model]
	if mx == nil {
		x := m.Matrix()
		mx = &x
		if matrices != nil {
			matrices[model] = mx
		}
	}
	return &Job{
		ID: id, Model: m.Name, Class: m.Class, GPUs: gpus, Iterations: iterations,
		ArrivalSeconds: arrivalS, IterSeconds: m.IterSeconds,
		IdealCPUsPerGPU: m.IdealCPUsPerGPU, IdealMemBytesPerGPU: float64(m.IdealMemBytesPerGPU),
		Speedup: m.Speedup, Matrix: mx,
	}, nil
}
