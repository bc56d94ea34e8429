package gavel

import (
	"fmt"
	"math"
)

// Shaper gives the jobs of a round their CPUs and memory on the servers
// their GPUs are on and says how fast each then runs, as a factor of its
// throughputs-file rate (package scheduler/joint: Synergy's TUNE or the
// GPU-proportional share, read against each job's sensitivity matrix).
// Without one (Config.Shaper nil) every job runs at the file's rate, as in
// Gavel, where CPUs and memory are not modelled.
type Shaper interface {
	// Shape returns one factor per job of round, in its order: a positive
	// number, 1 for the file's rate.
	Shape(round []Placed) ([]float64, error)
}

// Placed is one job of a round as a Shaper sees it: its id, throughputs
// key, GPU type and the servers of that type its GPUs are on.
type Placed struct {
	ID      int
	Job     JobType
	Type    string
	Servers []ServerGPUs
}

// ServerGPUs is a job's GPUs on one server; servers are numbered from 0
// within their type, as the cluster spec lays them out.
type ServerGPUs struct{ Server, GPUs int }

// shape asks the shaper (if any) for the round's factors; nil without one.
func (s *simulator) shape(out []assignment) ([]float64, error) {
	if s.cfg.Shaper == nil {
		return nil, nil
	}
	round := make([]Placed, len(out))
	for i, a := range out {
		if a.key.isPair() {
			return nil, fmt.Errorf("a shaper (CPUs and memory per job) does not run packed pairs")
		}
		js := s.jobs[a.key.a]
		p := Placed{ID: a.key.a, Job: js.job.Key(), Type: s.types[s.wtype[a.workers[0]]]}
		for _, w := range a.workers {
			srv := s.wserver[w]
			if n := len(p.Servers); n > 0 && p.Servers[n-1].Server == srv {
				p.Servers[n-1].GPUs++
				continue
			}
			p.Servers = append(p.Servers, ServerGPUs{Server: srv, GPUs: 1})
		}
		round[i] = p
	}
	f, err := s.cfg.Shaper.Shape(round)
	if err != nil {
		return nil, fmt.Errorf("t=%.1f s: shaping the round: %w", s.clock.Now(), err)
	}
	if len(f) != len(out) {
		return nil, fmt.Errorf("t=%.1f s: shaper gave %d factors for %d jobs", s.clock.Now(), len(f), len(out))
	}
	for i, v := range f {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("t=%.1f s: shaper gave job %d the factor %v", s.clock.Now(), round[i].ID, v)
		}
	}
	return f, nil
}
