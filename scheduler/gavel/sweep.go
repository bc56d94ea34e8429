package gavel

import (
	"context"
	"fmt"
	"io"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// SweepResult is every point's result, in the sweep's order: the one
// sweep result (simcore.SweepResult) and the rows read from profiles.
type SweepResult struct {
	simcore.SweepResult
	// ProfileRows lists the throughputs read from profiles (rows from
	// Gavel's file are not listed), emulated ones labelled.
	ProfileRows []ProfileRow `json:"throughputs_from_profiles,omitempty"`
}

// WriteJSON writes the results, indented (simcore.WriteJSON).
func (r *SweepResult) WriteJSON(w io.Writer) error { return simcore.WriteJSON(w, r) }

// Sweep is a set of runs over one cluster and throughputs file: every
// policy on a trace, or every policy × load × seed of the generator.
type Sweep struct {
	Config      Config
	Throughputs *Throughputs
	Trace       []Job            // a trace, or
	Generator   *GeneratorConfig // the generator (MeanInterarrivalS is set from each load; static: Loads = [0])
	Policies    []string
	// Strategies are Synergy's strategies to run beside the policies,
	// each under SynergyPolicy (points with Strategy set; Plugins builds
	// them).
	Strategies    []string
	SynergyPolicy string
	Loads         []float64 // jobs per hour; 0 for a static workload
	Seeds         []uint64
	Corrected     bool
	Workers       int
	// Entities, when set, is the hierarchy of the water-filling policies (nil: every job its
	// own entity).
	Entities *Entities
	// Estimate, when set, has packing policies see pair throughputs from Gavel's throughput
	// estimator (Config.PairEstimator), one estimator per run seeded with the run's seed.
	Estimate *EstimatorConfig
	// Plugins, when set, is asked first for a point's policy and shaper
	// (scheduler/joint: the joint policy, Synergy's strategies, CPUs and
	// memory per job); a nil policy leaves the point to NewPolicy, with
	// the shaper returned.
	Plugins func(p simcore.Point) (Policy, Shaper, error)
	// RunProgress, when set, hears how each running point goes
	// (Config.Progress, with the point); it may be called from several
	// goroutines at once.
	RunProgress func(p simcore.Point, rounds int, nowS float64, note string)
}

// build makes a point's policy and shaper.
func (s *Sweep) build(p simcore.Point) (Policy, Shaper, error) {
	var sh Shaper
	if s.Plugins != nil {
		pol, shp, err := s.Plugins(p)
		if err != nil || pol != nil {
			return pol, shp, err
		}
		sh = shp
	}
	if p.Strategy != "" {
		return nil, nil, fmt.Errorf("strategy %s: Synergy's strategies need the typed placement of scheduler/joint", p.Strategy)
	}
	pol, err := s.newPolicy(p)
	return pol, sh, err
}

// newPolicy builds a point's policy.
func (s *Sweep) newPolicy(p simcore.Point) (Policy, error) {
	if s.Entities != nil {
		for _, n := range HierarchicalPolicyNames {
			if n == p.Policy {
				return NewHierarchicalPolicy(n, s.Entities)
			}
		}
	}
	return NewPolicy(p.Policy, p.Seed, s.Corrected)
}

// Points lists the sweep's runs.
func (s *Sweep) Points() []simcore.Point {
	var runs []simcore.Point
	for _, st := range s.Strategies {
		runs = append(runs, simcore.Point{Policy: s.SynergyPolicy, Strategy: st})
	}
	for _, p := range s.Policies {
		runs = append(runs, simcore.Point{Policy: p})
	}
	loads := s.Loads
	if s.Trace != nil {
		loads = []float64{0}
	}
	var ps []simcore.Point
	for _, r := range runs {
		for _, l := range loads {
			for _, seed := range s.Seeds {
				r.JobsPerHour, r.Seed = l, seed
				ps = append(ps, r)
			}
		}
	}
	return ps
}

// CheckRunnable refuses a workload holding a job that no GPU type of the
// cluster can run (a trace's job, or a job type the generator can draw):
// it would never finish, and a run whose window holds it would never end.
func (s *Sweep) CheckRunnable() error {
	return checkRunnable(s.Config.Cluster, s.Throughputs, Workload{Trace: s.Trace}, s.Generator)
}

// Check builds every point's policy and workload once, so that bad
// options fail before any run.
func (s *Sweep) Check() error {
	if err := s.CheckRunnable(); err != nil {
		return err
	}
	for _, p := range s.Points() {
		pol, sh, err := s.build(p)
		if err != nil {
			return err
		}
		if _, packing := pol.(PackingPolicy); sh != nil && (packing || s.Config.Ideal) {
			return fmt.Errorf("policy %s: CPUs and memory per job (a shaper) need the round mechanism with single jobs: not with ideal mode or a packing policy", p.Policy)
		}
		if _, err := s.workload(p); err != nil {
			return err
		}
		if _, err := s.estimator(p); err != nil {
			return err
		}
	}
	return nil
}

// estimator is a point's throughput estimator (nil without Estimate).
func (s *Sweep) estimator(p simcore.Point) (PairEstimator, error) {
	if s.Estimate == nil {
		return nil, nil
	}
	c := *s.Estimate
	c.Seed = p.Seed
	e, err := newEstimator(s.Throughputs, c)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Sweep) workload(p simcore.Point) (Workload, error) {
	if s.Trace != nil {
		return Workload{Trace: s.Trace}, nil
	}
	g := *s.Generator
	g.Seed = p.Seed
	g.MeanInterarrivalS = 0
	if p.JobsPerHour > 0 {
		g.MeanInterarrivalS = 3600 / p.JobsPerHour
	}
	gen, err := NewGenerator(g, s.Throughputs)
	if err != nil {
		return Workload{}, err
	}
	return Workload{Generator: gen}, nil
}

// Run runs the points on up to Workers goroutines through the one sweep
// driver (simcore.Sweep: results in Points order whatever the parallelism;
// the first failed run stops the sweep; a cancelled ctx stops it; the runs
// that finished are returned with any error); progress (may be nil) is
// called after each run.
func (s *Sweep) Run(ctx context.Context, progress func(done, total int, p simcore.Point)) (*SweepResult, error) {
	res, err := simcore.Sweep(ctx, s.Points(), s.Workers, s.run1, progress)
	return &SweepResult{SweepResult: *res}, err
}

func (s *Sweep) run1(ctx context.Context, p simcore.Point) (*simcore.Result, error) {
	pol, sh, err := s.build(p)
	if err != nil {
		return nil, err
	}
	w, err := s.workload(p)
	if err != nil {
		return nil, err
	}
	cfg := s.Config
	cfg.Seed, cfg.Shaper = p.Seed, sh
	if s.RunProgress != nil {
		cfg.Progress = func(rounds int, nowS float64, note string) { s.RunProgress(p, rounds, nowS, note) }
	}
	if cfg.PairEstimator, err = s.estimator(p); err != nil {
		return nil, err
	}
	r, err := Run(ctx, cfg, s.Throughputs, w, pol)
	if err != nil {
		return nil, err
	}
	r.Policy, r.Strategy = p.Policy, p.Strategy
	return r, nil
}
