package joint

import (
	"fmt"
	"sort"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
)

// Shaper is a gavel.Shaper: it gives each job of a round CPUs and memory
// per GPU on the servers its GPUs are on, and scales its rate by Factor
// there. Proportional (Gavel, and Synergy's fair): every job the type's
// share. TUNE: every job first floor (min(ideal, share)); then, in job id
// (arrival) order, a job is raised to its ideal where every one of its
// servers still holds the difference; a server holds its GPUs × the share.
type Shaper struct {
	cluster Cluster
	sens    Sensitivities
	tune    bool
	// grants, when set, gets each round's grants (tests and explanations).
	grants func(round []gavel.Placed, grants []grant)
}

var _ gavel.Shaper = (*Shaper)(nil)

// grant is what one job of a round holds per GPU and the factor its rate
// is scaled by.
type grant struct {
	CPUsPerGPU, MemBytesPerGPU float64
	Factor                     float64
}

// newShaper is the shaper of strategy (Fair or Tune) on c.
func newShaper(c Cluster, sens Sensitivities, strategy string) (*Shaper, error) {
	switch strategy {
	case Fair, Tune:
		return &Shaper{cluster: c, sens: sens, tune: strategy == Tune}, nil
	}
	return nil, fmt.Errorf("strategy %q does not run on a typed cluster (%s or %s do)", strategy, Fair, Tune)
}

type serverKey struct {
	typ    string
	server int
}

// Shape implements gavel.Shaper.
func (s *Shaper) Shape(round []gavel.Placed) ([]float64, error) {
	grants := make([]grant, len(round))
	jobs := make([]*scheduler.Job, len(round))
	free := map[serverKey]*[2]float64{} // CPUs, bytes left
	for i, p := range round {
		t, ok := s.cluster.byName(p.Type)
		if !ok {
			return nil, fmt.Errorf("job %d: GPU type %q is not in the cluster", p.ID, p.Type)
		}
		jobs[i] = s.sens.Of(p.Job.Model)
		c, m := t.CPUsPerGPU, t.MemBytesPerGPU
		if s.tune {
			c, m = floor(jobs[i], t)
		}
		grants[i] = grant{CPUsPerGPU: c, MemBytesPerGPU: m}
		for _, sv := range p.Servers {
			k := serverKey{p.Type, sv.Server}
			if free[k] == nil {
				n := float64(t.GPUsPerServer)
				free[k] = &[2]float64{n * t.CPUsPerGPU, n * t.MemBytesPerGPU}
			}
			free[k][0] -= c * float64(sv.GPUs)
			free[k][1] -= m * float64(sv.GPUs)
		}
	}
	if s.tune {
		raise(round, jobs, grants, free)
	}
	out := make([]float64, len(round))
	for i := range round {
		grants[i].Factor = Factor(jobs[i], grants[i].CPUsPerGPU, grants[i].MemBytesPerGPU)
		out[i] = grants[i].Factor
	}
	if s.grants != nil {
		s.grants(round, grants)
	}
	return out, nil
}

// raise is TUNE's second pass: in job id order, each sensitive job below
// its ideal gets it where all of its servers hold the difference.
func raise(round []gavel.Placed, jobs []*scheduler.Job, grants []grant, free map[serverKey]*[2]float64) {
	order := make([]int, len(round))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return round[order[a]].ID < round[order[b]].ID })
	const eps = 1e-9
	for _, i := range order {
		j, p := jobs[i], round[i]
		if j == nil || j.Matrix == nil {
			continue
		}
		dc := max(0, j.IdealCPUsPerGPU-grants[i].CPUsPerGPU)
		dm := max(0, j.IdealMemBytesPerGPU-grants[i].MemBytesPerGPU)
		if dc <= 0 && dm <= 0 {
			continue
		}
		fits := true
		for _, sv := range p.Servers {
			f := free[serverKey{p.Type, sv.Server}]
			n := float64(sv.GPUs)
			fits = fits && f[0]+eps >= dc*n && f[1]+eps*1e9 >= dm*n
		}
		if !fits {
			continue
		}
		for _, sv := range p.Servers {
			f := free[serverKey{p.Type, sv.Server}]
			f[0] -= dc * float64(sv.GPUs)
			f[1] -= dm * float64(sv.GPUs)
		}
		grants[i].CPUsPerGPU += dc
		grants[i].MemBytesPerGPU += dm
	}
}
