package gavel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/scheduler/gavel/lp"
)

// Entities is the hierarchy of Gavel's hierarchical policies (max_min_fairness_water_filling):
// parties (teams, users) with weights, each splitting its weight over its jobs by 'fairness'
// or 'fifo', and which job belongs to which.
//
// File format (JSON; unknown fields are errors):
//
//	{
//	  "entities": [
//	    {"name": "search", "weight": 1, "policy": "fairness"},
//	    {"name": "ads",    "weight": 2, "policy": "fifo"}
//	  ],
//	  "jobs": {"search": [0, 3], "ads": [1]},
//	  "assign": "round_robin"
//	}
//
// weight > 0; policy "fairness" (default: the entity's weight split over its jobs in
// proportion to their priority weights) or "fifo" (its oldest job gets all of it, Gavel's
// priority_reweighting_policies). "jobs" lists job ids (the trace's line order from 0, or the
// generator's numbering) explicitly; every other job is assigned by "assign": "round_robin"
// (the default: job id mod the number of entities, in the file's order).
type Entities struct {
	List   []EntitySpec
	jobs   map[int]int // explicit job id → index into List
	assign string
}

// EntitySpec is one entity of the file.
type EntitySpec struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Policy string  `json:"policy,omitempty"`
}

type entitiesFile struct {
	Entities []EntitySpec     `json:"entities"`
	Jobs     map[string][]int `json:"jobs,omitempty"`
	Assign   string           `json:"assign,omitempty"`
}

// LoadEntities reads an entities file: a regular file of at most
// MaxFileBytes.
func LoadEntities(path string) (*Entities, error) {
	b, err := safefile.ReadFile(path, MaxFileBytes, "entities")
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	e, err := ParseEntities(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// ParseEntities reads the entities JSON (see Entities); an error names the field.
func ParseEntities(r io.Reader) (*Entities, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f entitiesFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	if len(f.Entities) == 0 {
		return nil, fmt.Errorf("entities: field \"entities\": empty; want at least one entity")
	}
	e := &Entities{List: f.Entities, jobs: map[int]int{}, assign: f.Assign}
	byName := map[string]int{}
	for i := range e.List {
		en := &e.List[i]
		field := fmt.Sprintf("entities[%d]", i)
		if en.Name == "" {
			return nil, fmt.Errorf("entities: %s.name: empty", field)
		}
		if _, dup := byName[en.Name]; dup {
			return nil, fmt.Errorf("entities: %s.name: %q given twice", field, en.Name)
		}
		byName[en.Name] = i
		if !(en.Weight > 0) || math.IsInf(en.Weight, 0) {
			return nil, fmt.Errorf("entities: %s.weight: %v; want > 0 and finite", field, en.Weight)
		}
		switch en.Policy {
		case "":
			en.Policy = "fairness"
		case "fairness", "fifo":
		default:
			return nil, fmt.Errorf("entities: %s.policy: %q; want fairness or fifo", field, en.Policy)
		}
	}
	names := make([]string, 0, len(f.Jobs))
	for n := range f.Jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		idx, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("entities: jobs.%s: no entity of that name", n)
		}
		for k, id := range f.Jobs[n] {
			if id < 0 {
				return nil, fmt.Errorf("entities: jobs.%s[%d]: job id %d; want >= 0", n, k, id)
			}
			if prev, dup := e.jobs[id]; dup {
				return nil, fmt.Errorf("entities: jobs.%s[%d]: job %d is already in %s", n, k, id, e.List[prev].Name)
			}
			e.jobs[id] = idx
		}
	}
	switch f.Assign {
	case "":
		e.assign = "round_robin"
	case "round_robin":
	default:
		return nil, fmt.Errorf("entities: assign: %q; want round_robin", f.Assign)
	}
	return e, nil
}

// Of returns the index (into List) of the entity that job id belongs to.
func (e *Entities) Of(id int) int {
	if i, ok := e.jobs[id]; ok {
		return i
	}
	return id % len(e.List)
}

// hierarchy maps the active jobs onto lp's hierarchy.
func (e *Entities) hierarchy(jobs []StateJob) *lp.Hierarchy {
	if e == nil {
		return nil
	}
	h := &lp.Hierarchy{JobEntity: make([]int, len(jobs))}
	for _, en := range e.List {
		h.Entities = append(h.Entities, lp.Entity{Weight: en.Weight, FIFO: en.Policy == "fifo"})
	}
	for i, j := range jobs {
		h.JobEntity[i] = e.Of(j.ID)
	}
	return h
}

// waterFillingPolicy is Gavel's MaxMinFairnessWaterFillingPolicy[WithPerf]: hierarchical
// lexicographic max-min fairness over entities (lp.SolveWaterFilling). Without entities it is
// plain lexicographic max-min with the jobs' priority weights.
type waterFillingPolicy struct {
	policy   string
	entities *Entities
}

// NewHierarchicalPolicy builds max_min_fairness_water_filling[_perf] over the given entities
// (nil: every job on its own, weighted by its priority).
func NewHierarchicalPolicy(name string, e *Entities) (Policy, error) {
	if name != lp.MaxMinFairnessWaterFilling && name != lp.MaxMinFairnessWaterFillingPerf {
		return nil, fmt.Errorf("unknown hierarchical policy %q (known: %s, %s)", name,
			lp.MaxMinFairnessWaterFilling, lp.MaxMinFairnessWaterFillingPerf)
	}
	return waterFillingPolicy{policy: name, entities: e}, nil
}

func (p waterFillingPolicy) Name() string {
	if p.policy == lp.MaxMinFairnessWaterFillingPerf {
		return "MaxMinFairnessWaterFilling_Perf"
	}
	return "MaxMinFairnessWaterFilling"
}

func (p waterFillingPolicy) Allocate(s *State) (Allocation, error) {
	if len(s.Jobs) == 0 {
		return Allocation{}, nil
	}
	prob := s.lpProblem()
	sol, err := lp.SolveWaterFilling(p.policy, prob, p.entities.hierarchy(s.Jobs), lp.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.policy, err)
	}
	a := Allocation{}
	for i, j := range s.Jobs {
		a[j.ID] = sol.X[i]
	}
	return a, nil
}
