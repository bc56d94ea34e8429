package gavel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Point is one run of a sweep.
type Point struct {
	Policy      string  `json:"policy"`
	JobsPerHour float64 `json:"jobs_per_hour,omitempty"`
	Seed        uint64  `json:"seed"`
}

// Run1 is one point's result.
type Run1 struct {
	Point  Point   `json:"point"`
	Result *Result `json:"result"`
}

// SweepResult is every point's result, in the sweep's order.
type SweepResult struct {
	Runs []Run1 `json:"runs"`
	// ProfileRows lists the throughputs read from profiles (rows from
	// Gavel's file are not listed), emulated ones labelled.
	ProfileRows []ProfileRow `json:"throughputs_from_profiles,omitempty"`
}

// WriteJSON writes the results, indented.
func (r *SweepResult) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Sweep is a set of runs over one cluster and throughputs file: every
// policy on a trace, or every policy × load × seed of the generator.
type Sweep struct {
	Config      Config
	Throughputs *Throughputs
	Trace       []Job            // a trace, or
	Generator   *GeneratorConfig // the generator (MeanInterarrivalS is set from each load; static: Loads = [0])
	Policies    []string
	Loads       []float64 // jobs per hour; 0 for a static workload
	Seeds       []uint64
	Corrected   bool
	Workers     int
	// Entities, when set, is the hierarchy of the water-filling policies (nil: every job its
	// own entity).
	Entities *Entities
	// Estimate, when set, has packing policies see pair throughputs from Gavel's throughput
	// estimator (Config.PairEstimator), one estimator per run seeded with the run's seed.
	Estimate *EstimatorConfig
}

// newPolicy builds a point's policy.
func (s *Sweep) newPolicy(p Point) (Policy, error) {
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
func (s *Sweep) Points() []Point {
	var ps []Point
	for _, p := range s.Policies {
		if s.Trace != nil {
			for _, seed := range s.Seeds {
				ps = append(ps, Point{Policy: p, Seed: seed})
			}
			continue
		}
		for _, l := range s.Loads {
			for _, seed := range s.Seeds {
				ps = append(ps, Point{Policy: p, JobsPerHour: l, Seed: seed})
			}
		}
	}
	return ps
}

// Check builds every point's policy and workload once, so that bad
// options fail before any run.
func (s *Sweep) Check() error {
	for _, p := range s.Points() {
		if _, err := s.newPolicy(p); err != nil {
			return err
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
func (s *Sweep) estimator(p Point) (PairEstimator, error) {
	if s.Estimate == nil {
		return nil, nil
	}
	c := *s.Estimate
	c.Seed = p.Seed
	e, err := NewEstimator(s.Throughputs, c)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Sweep) workload(p Point) (Workload, error) {
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

// Run runs the points on up to Workers goroutines; progress (may be nil)
// is called after each run. Results are in Points order whatever the
// parallelism, so one seed gives byte-identical output.
func (s *Sweep) Run(ctx context.Context, progress func(done, total int, p Point)) (*SweepResult, error) {
	points := s.Points()
	out := &SweepResult{Runs: make([]Run1, len(points))}
	workers := max(1, min(s.Workers, len(points)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := s.run1(ctx, points[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s (seed %d, %g jobs/h): %w", points[i].Policy, points[i].Seed, points[i].JobsPerHour, err)
					cancel()
				}
				out.Runs[i] = Run1{Point: points[i], Result: r}
				done++
				if progress != nil && err == nil {
					progress(done, len(points), points[i])
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range points {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Sweep) run1(ctx context.Context, p Point) (*Result, error) {
	pol, err := s.newPolicy(p)
	if err != nil {
		return nil, err
	}
	w, err := s.workload(p)
	if err != nil {
		return nil, err
	}
	cfg := s.Config
	cfg.Seed = p.Seed
	if cfg.PairEstimator, err = s.estimator(p); err != nil {
		return nil, err
	}
	r, err := Run(ctx, cfg, s.Throughputs, w, pol)
	if err != nil {
		return nil, err
	}
	r.Policy = p.Policy
	return r, nil
}
