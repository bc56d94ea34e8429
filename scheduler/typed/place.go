package typed

import (
	"errors"
	"fmt"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
)

// Choice is the GPU type one job got and why.
type Choice struct {
	// Type is the chosen type; empty when no type had enough free GPUs.
	Type string `json:"gpu_type"`
	// Source says where Rates came from: throughputs, profile or equal.
	Source string `json:"rate_source"`
	// Rates is the job's throughput per type at RateAt (steps/s from a
	// throughputs file × its matrix's factor; the factor alone, 0–1 of its
	// ideal, from a profile or zoo matrix; 1 when equal).
	Rates map[string]float64 `json:"rates"`
	// RateAt is, per type, the CPUs and memory per GPU the rate was read
	// at: what the strategy gave the job there, or the type's share where
	// the type had no room.
	RateAt map[string]scheduler.PerGPU `json:"rate_at_per_gpu"`
	// TypeReason compares the chosen type's rate with the others'.
	TypeReason string `json:"type_reason"`
}

// Outcome is one job's answer: its type, then its placement on that type.
type Outcome struct {
	scheduler.JobOutcome
	Choice
}

// Plan is Place's answer.
type Plan struct {
	Cluster  string `json:"cluster"`
	Strategy string `json:"strategy"`
	Policy   string `json:"policy"`
	Types    []Type `json:"types"`
	// Jobs is one outcome per queued job, in queue order.
	Jobs []Outcome `json:"jobs"`
	// PerType is PlaceQueue's plan for each type that got jobs, by name.
	PerType  map[string]*scheduler.QueuePlan `json:"-"`
	Warnings []string                        `json:"warnings"`
}

// ThroughputsError is Place's error for a throughputs file that lacks a
// type of the cluster or a job's entry on one.
type ThroughputsError struct{ Err error }

func (e *ThroughputsError) Error() string { return e.Err.Error() }
func (e *ThroughputsError) Unwrap() error { return e.Err }

// Place answers q on a typed cluster (types from Types(q.Cluster)): each
// job, in queue order, gets the type with its highest rate at the CPUs and
// memory the strategy gives it there (joint's rule: see the package
// comment) among those with enough free GPUs and room (after q.InUse and
// the jobs before it; ties go to the type listed first), and each type's
// jobs are then placed on that type's servers by scheduler.PlaceQueue with
// q's strategy and policy. thr
// (may be nil) is a Gavel throughputs file. Errors: an invalid job, a
// *ThroughputsError, and a *scheduler.InUseError for q.InUse.
func Place(q scheduler.Queue, types []Type, thr *gavel.Throughputs) (*Plan, error) {
	if q.Strategy == nil {
		return nil, errors.New("place queue: no strategy")
	}
	if thr != nil {
		if err := CheckThroughputs(thr, types); err != nil {
			return nil, &ThroughputsError{err}
		}
	}
	inUse, free, err := splitInUse(q.InUse, types)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Cluster: q.Cluster.Name, Strategy: q.Strategy.Name(), Policy: scheduler.FIFO{}.Name(), Types: types,
		PerType: map[string]*scheduler.QueuePlan{}, Warnings: []string{}}
	if q.Policy != nil {
		plan.Policy = q.Policy.Name()
	}
	assigned := make([][]*scheduler.Job, len(types))
	choices := make([]Choice, len(q.Jobs))
	seen := map[int]bool{}
	for n, j := range q.Jobs {
		if j == nil || seen[j.ID] {
			return nil, fmt.Errorf("place queue: jobs[%d] is nil or repeats an ID", n)
		}
		seen[j.ID] = true
		if err := j.Validate(); err != nil {
			return nil, err
		}
		r, err := baseRates(j, types, thr)
		if err != nil {
			return nil, &ThroughputsError{err}
		}
		room, err := tentative(q, j, types, inUse, assigned, free, &r)
		if err != nil {
			return nil, err
		}
		k := choose(r, room)
		choices[n] = Choice{Source: r.Source, Rates: map[string]float64{}, RateAt: map[string]scheduler.PerGPU{},
			TypeReason: reason(j, k, r, types, free, room)}
		for i, t := range types {
			choices[n].Rates[t.Name] = r.Values[i]
			choices[n].RateAt[t.Name] = r.Grants[i]
		}
		if k >= 0 {
			choices[n].Type = types[k].Name
			free[k] -= j.GPUs
			assigned[k] = append(assigned[k], j)
		}
	}
	byID := map[int]scheduler.JobOutcome{}
	for k, t := range types {
		if len(assigned[k]) == 0 {
			continue
		}
		sub := q
		sub.Cluster, sub.InUse, sub.Jobs = &types[k].cluster, inUse[k], assigned[k]
		p, err := scheduler.PlaceQueue(sub)
		if err != nil {
			return nil, fmt.Errorf("gpu type %s: %w", t.Name, err)
		}
		plan.PerType[t.Name] = p
		plan.Warnings = append(plan.Warnings, p.Warnings...)
		for _, o := range p.Jobs {
			byID[o.JobID] = o
		}
	}
	for n, j := range q.Jobs {
		o, ok := byID[j.ID]
		if !ok {
			o = waiting(j, free)
		}
		plan.Jobs = append(plan.Jobs, Outcome{JobOutcome: o, Choice: choices[n]})
	}
	return plan, nil
}

// splitInUse gives each type its entries of inUse and its free GPUs.
func splitInUse(inUse []scheduler.Usage, types []Type) ([][]scheduler.Usage, []int, error) {
	where := map[string]int{}
	free := make([]int, len(types))
	for k, t := range types {
		free[k] = t.GPUs
		for _, s := range t.cluster.Servers {
			where[s.Name] = k
		}
	}
	out := make([][]scheduler.Usage, len(types))
	for i, u := range inUse {
		k, ok := where[u.Server]
		if !ok {
			return nil, nil, &scheduler.InUseError{Index: i, Err: fmt.Errorf("servers[%d].server = %q: no such server in the cluster", i, u.Server)}
		}
		out[k] = append(out[k], u)
		free[k] -= u.GPUs
	}
	return out, free, nil
}

// tentative places j on every type with j.GPUs free, after the jobs
// already given the type, and reads r there at what j got; on a type
// without room (GPUs, or CPUs and memory for the strategy) r is read at
// the type's share. room[i] says whether j was placed on type i.
func tentative(q scheduler.Queue, j *scheduler.Job, types []Type, inUse [][]scheduler.Usage, assigned [][]*scheduler.Job, free []int, r *Rates) ([]bool, error) {
	room := make([]bool, len(types))
	for i, t := range types {
		g := scheduler.PerGPU{CPUs: t.CPUsPerGPU, MemBytes: t.MemBytesPerGPU}
		if free[i] >= j.GPUs {
			sub := q
			sub.Cluster, sub.InUse, sub.Jobs = &types[i].cluster, inUse[i], append(append([]*scheduler.Job(nil), assigned[i]...), j)
			p, err := scheduler.PlaceQueue(sub)
			if err != nil {
				return nil, fmt.Errorf("gpu type %s: %w", t.Name, err)
			}
			for _, o := range p.Jobs {
				if o.JobID == j.ID && o.Placed {
					room[i] = true
					g = scheduler.PerGPU{CPUs: o.CPUs / float64(o.GPUs), MemBytes: o.MemBytes / float64(o.GPUs)}
				}
			}
		}
		r.at(i, j, g)
	}
	return room, nil
}

// choose returns the index of the type with the highest rate among those
// with room, the first on ties; −1 when none has room.
func choose(r Rates, room []bool) int {
	best := -1
	for k, ok := range room {
		if ok && (best < 0 || r.Values[k] > r.Values[best]) {
			best = k
		}
	}
	return best
}

// reason says why j got type k (or none): its rate against every other
// type with room, the faster types that were full, and the CPUs and
// memory per GPU each rate was read at.
func reason(j *scheduler.Job, k int, r Rates, types []Type, free []int, room []bool) string {
	if k < 0 {
		return fmt.Sprintf("no type has %d free GPUs (%s)", j.GPUs, freeText(types, free))
	}
	var vs, full []string
	for i, t := range types {
		switch {
		case i == k:
		case room[i]:
			vs = append(vs, ratio(r.Values[k], r.Values[i], t.Name))
		case free[i] >= j.GPUs && r.Values[i] > r.Values[k]:
			full = append(full, fmt.Sprintf("%s would be %s but its servers lack the CPUs or memory", t.Name, faster(r.Values[i], r.Values[k])))
		case r.Values[i] > r.Values[k]:
			full = append(full, fmt.Sprintf("%s would be %s but has %d of %d GPUs free", t.Name, faster(r.Values[i], r.Values[k]), max(free[i], 0), j.GPUs))
		default:
			full = append(full, fmt.Sprintf("%s has %d of %d GPUs free", t.Name, max(free[i], 0), j.GPUs))
		}
	}
	s := types[k].Name + " (rates from " + r.Source + "): "
	if len(vs) == 0 {
		s += fmt.Sprintf("only type with %d free GPUs", j.GPUs)
	} else {
		s += strings.Join(vs, ", ")
		if strings.Contains(s, "same rate") {
			s += " (a tie goes to the type listed first)"
		}
	}
	if len(full) > 0 {
		s += "; " + strings.Join(full, ", ")
	}
	return s + "; " + ratesText(r, types)
}

// ratesText is each type's rate and the CPUs and memory per GPU it was
// read at: "rate per type at CPUs, GB per GPU: v100 0.42 at 3, 62.50; …".
func ratesText(r Rates, types []Type) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %.3g at %.3g, %.2f", t.Name, r.Values[i], r.Grants[i].CPUs, r.Grants[i].MemBytes/1e9)
	}
	return "rate per type at CPUs, GB per GPU: " + strings.Join(parts, "; ")
}

// ratio is "2.0× the k80 rate", "same rate as k80", or "k80's rate is 0".
func ratio(a, b float64, other string) string {
	switch {
	case b <= 0 && a <= 0:
		return "same rate (0) as " + other
	case b <= 0:
		return other + "'s rate is 0"
	case a == b:
		return "same rate as " + other
	}
	return fmt.Sprintf("%.2f× the %s rate", a/b, other)
}

// faster is "1.50× faster", or "faster" when the slower rate is 0.
func faster(a, b float64) string {
	if b <= 0 {
		return "faster"
	}
	return fmt.Sprintf("%.2f× faster", a/b)
}

func freeText(types []Type, free []int) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %d of %d free", t.Name, max(free[i], 0), t.GPUs)
	}
	return strings.Join(parts, ", ")
}

// waiting is the outcome of a job no type had room for.
func waiting(j *scheduler.Job, free []int) scheduler.JobOutcome {
	most := 0
	for _, f := range free {
		most = max(most, f)
	}
	o := scheduler.JobOutcome{JobID: j.ID, Model: j.Model, GPUs: j.GPUs, Note: "no GPU type has enough free GPUs",
		Shortfalls: []scheduler.Shortfall{{Resource: "gpu", Need: float64(j.GPUs), Free: float64(most)}}}
	o.Reason = scheduler.Decision{Note: o.Note, Shortfalls: o.Shortfalls}.Reason()
	return o
}
