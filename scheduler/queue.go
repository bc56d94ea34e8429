package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Usage is what work outside the queue (jobs already running) holds on one
// server, by the server's name. PlaceQueue reserves it before placing the
// queue and never moves it.
type Usage struct {
	Server   string  `json:"server"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

// ParseUsage decodes the JSON form of a usage list, strictly (unknown fields
// are refused; errors name the line and column):
//
//	{"servers": [{"server": "server-3", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000}]}
func ParseUsage(data []byte) ([]Usage, error) {
	var f struct {
		Servers []Usage `json:"servers"`
	}
	if err := safefile.NoDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("in use: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError("in use", data, dec, err)
	}
	for k, u := range f.Servers {
		if why := safefile.TextProblem(u.Server, safefile.MaxNameBytes); why != "" {
			return nil, fmt.Errorf("in use: servers[%d].server = %q: %s", k, safefile.Clip(u.Server, 64), why)
		}
		if u.CPUs > 0 && u.CPUs < sensitivity.MinCPUs {
			return nil, fmt.Errorf("in use: servers[%d].cpus = %v: neither 0 nor at least %g, the least CPU a job can be given", k, u.CPUs, sensitivity.MinCPUs)
		}
	}
	return f.Servers, nil
}

// LoadUsage reads a usage file (ParseUsage); decoding errors name the file.
func LoadUsage(path string) ([]Usage, error) {
	data, err := safefile.ReadFile(path, MaxClusterFileBytes, "usage")
	if err != nil {
		return nil, err
	}
	u, err := ParseUsage(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// InUseError is PlaceQueue's error for an entry of Queue.InUse that names no
// server of the cluster, is negative, or does not fit the server. Err names
// the entry as servers[Index], the field of the JSON form.
type InUseError struct {
	Index int
	Err   error
}

func (e *InUseError) Error() string { return "in use: " + e.Err.Error() }
func (e *InUseError) Unwrap() error { return e.Err }

// reserveInUse marks each entry of inUse as taken on r, as a job of its own
// ("in use", ID −1−k) that strategies never revert.
func reserveInUse(r *Round, inUse []Usage) error {
	index := make(map[string]int, len(r.cluster.Servers))
	for i, s := range r.cluster.Servers {
		index[s.Name] = i
	}
	for k, u := range inUse {
		i, ok := index[u.Server]
		if !ok {
			return &InUseError{k, fmt.Errorf("servers[%d].server = %q: no such server in cluster %s", k, u.Server, r.cluster.Name)}
		}
		if u.GPUs < 0 || !(u.CPUs >= 0) || !(u.MemBytes >= 0) {
			return &InUseError{k, fmt.Errorf("servers[%d]: negative usage", k)}
		}
		held := &Job{ID: -1 - k, Model: "in use", GPUs: max(u.GPUs, 1)}
		a := Allocation{JobID: held.ID, Servers: []ServerAlloc{{Server: i, GPUs: u.GPUs, CPUs: u.CPUs, MemBytes: u.MemBytes}}, Speedup: 1}
		if err := r.Reserve(held, a); err != nil {
			return &InUseError{k, fmt.Errorf("servers[%d]: %w", k, err)}
		}
	}
	return nil
}

// Queue is one placement question: on Cluster, with InUse already held,
// where do Jobs go now?
type Queue struct {
	Cluster *Cluster
	// InUse is what is already held, per server; several entries may name
	// one server.
	InUse []Usage
	// Jobs are the queued jobs, in submission order. IDs must be unique;
	// each job is validated (Job.Validate).
	Jobs []*Job
	// Strategy places the jobs (fair, greedy, tune, opt, ...).
	Strategy Strategy
	// Policy orders them; nil means FIFO. Every job is new to a policy
	// (nothing executed, no attained service), so FIFO, LAS and DRF's and
	// Tetris's ties follow ArrivalSeconds, then the order given.
	Policy Policy
	// NowSeconds is the clock the policies read (FTF), on the jobs'
	// ArrivalSeconds scale.
	NowSeconds float64
}

// ServerShare is what a placed job gets on one server.
type ServerShare struct {
	Server   string  `json:"server"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

// JobOutcome is one queued job's answer.
type JobOutcome struct {
	JobID int    `json:"job"`
	Model string `json:"model"`
	GPUs  int    `json:"gpus"`
	// Placed says whether the job runs now.
	Placed bool `json:"placed"`
	// Servers, CPUs and MemBytes are the job's final allocation when
	// placed (after any revert later in the same pass): per server by
	// name, then summed.
	Servers  []ServerShare `json:"servers,omitempty"`
	CPUs     float64       `json:"cpus"`
	MemBytes float64       `json:"mem_bytes"`
	// FairCPUs and FairMemBytes are the GPU-proportional share of the
	// job's GPUs, for comparison.
	FairCPUs     float64 `json:"fair_cpus"`
	FairMemBytes float64 `json:"fair_mem_bytes"`
	// Speedup is the predicted throughput on the allocation relative to
	// the GPU-proportional share (0 when waiting).
	Speedup float64 `json:"speedup"`
	// Demoted: placed at the fair share instead of the ideal demand;
	// Reverted: a later job's placement took the surplus back.
	Demoted  bool `json:"demoted,omitempty"`
	Reverted bool `json:"reverted,omitempty"`
	// Note says what the strategy did ("ideal demand", "dropped to fair
	// share: ideal demand did not fit", "waiting").
	Note string `json:"note"`
	// Shortfalls say what did not fit where: why a waiting job waits, or
	// why a placed job did not get its ideal demand.
	Shortfalls []Shortfall `json:"shortfalls,omitempty"`
	// Reason is Note and Shortfalls in one line.
	Reason string `json:"reason"`
}

// QueuePlan is PlaceQueue's answer.
type QueuePlan struct {
	Cluster   string `json:"cluster"`
	Strategy  string `json:"strategy"`
	Policy    string `json:"policy"`
	FairShare PerGPU `json:"fair_share_per_gpu"`
	// Jobs holds one outcome per queued job, in the order the jobs were
	// offered (the policy's, then the strategy's own for drf and tetris);
	// jobs the policy did not offer (LAS offers only those that fit the
	// free GPUs by count) come last, in the policy's order.
	Jobs []JobOutcome `json:"jobs"`
	// OptBound is Synergy-OPT's LP bound on the offered jobs' total
	// normalised throughput on the free resources (strategy opt only).
	OptBound *float64 `json:"opt_bound_throughput,omitempty"`
	// Warnings name the jobs whose sensitivity was clamped (profiled on a
	// small machine) or that are larger than the whole cluster.
	Warnings []string `json:"warnings"`
}

// PlaceQueue answers a Queue: it reserves InUse on the cluster, has the
// policy order the jobs (and the strategy, for drf and tetris), offers them
// to the strategy in that order on what is free (Schedule: a job needing
// more GPUs than are left waits without being offered) and reports every
// job, placed or waiting and why. It is deterministic: the same queue gives
// the same plan. Nothing in q is changed. Errors: a missing cluster or
// strategy, an invalid cluster or job, a repeated job ID, and an
// *InUseError for InUse.
func PlaceQueue(q Queue) (*QueuePlan, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	policy := q.Policy
	if policy == nil {
		policy = FIFO{}
	}
	r := NewRound(q.Cluster)
	if err := reserveInUse(r, q.InUse); err != nil {
		return nil, err
	}
	plan := &QueuePlan{Cluster: q.Cluster.Name, Strategy: q.Strategy.Name(), Policy: policy.Name(), FairShare: r.Shape().Fair,
		Jobs: make([]JobOutcome, 0, len(q.Jobs)), Warnings: queueWarnings(q.Jobs, q.Cluster)}
	offer, left := q.offer(policy, r)
	if _, ok := q.Strategy.(Opt); ok {
		probe := NewRound(q.Cluster)
		_ = reserveInUse(probe, q.InUse) // it fitted r
		if p, err := SolveOpt(probe, offer); err == nil {
			plan.OptBound = &p.BoundThroughput
		}
	}
	decisions := Schedule(r, q.Strategy, offer)
	final := make(map[int]*Allocation, len(offer))
	r.EachPlacement(func(j *Job, a *Allocation) { final[j.ID] = a })
	for k, d := range decisions {
		plan.Jobs = append(plan.Jobs, outcome(r, offer[k], d, final[d.JobID]))
	}
	for _, j := range left {
		d := Decision{JobID: j.ID, Note: "not offered by policy " + policy.Name() + " (it offers the jobs that fit the free GPUs by count, in its order)"}
		if free := r.FreeGPUs(); j.GPUs > free {
			d.Shortfalls = []Shortfall{{Resource: "gpu", Need: float64(j.GPUs), Free: float64(free)}}
		}
		plan.Jobs = append(plan.Jobs, outcome(r, j, d, nil))
	}
	return plan, nil
}

func (q *Queue) validate() error {
	if q.Cluster == nil {
		return errors.New("place queue: no cluster")
	}
	if q.Strategy == nil {
		return errors.New("place queue: no strategy")
	}
	if err := q.Cluster.Validate(); err != nil {
		return err
	}
	seen := make(map[int]int, len(q.Jobs))
	for k, j := range q.Jobs {
		if j == nil {
			return fmt.Errorf("place queue: jobs[%d] is nil", k)
		}
		if err := j.Validate(); err != nil {
			return err
		}
		if prev, dup := seen[j.ID]; dup {
			return fmt.Errorf("job %d: the same ID as jobs[%d]", j.ID, prev)
		}
		seen[j.ID] = k
	}
	return nil
}

// offer returns the jobs to offer, in order, and those the policy left out
// (in the policy's order).
func (q *Queue) offer(policy Policy, r *Round) (offer, left []*Job) {
	shape := r.Shape()
	actives := make([]*Active, len(q.Jobs))
	for k, j := range q.Jobs {
		actives[k] = NewActive(j, IdealDemand(j, shape).Speedup)
	}
	ctx := NewOrderContext(q.Strategy, q.NowSeconds, r.FreeGPUs())
	offered := Offer(policy, q.Strategy, actives, q.Cluster, ctx)
	in := make(map[*Job]bool, len(offered))
	for _, a := range offered {
		offer = append(offer, a.Job)
		in[a.Job] = true
	}
	for _, a := range actives { // sorted in place by the policy
		if !in[a.Job] {
			left = append(left, a.Job)
		}
	}
	return offer, left
}

// outcome reports decision d for job j; a is j's final allocation (nil when
// waiting).
func outcome(r *Round, j *Job, d Decision, a *Allocation) JobOutcome {
	fair := r.Shape().Fair.Times(j.GPUs)
	o := JobOutcome{JobID: j.ID, Model: j.Model, GPUs: j.GPUs, FairCPUs: fair.CPUs, FairMemBytes: fair.MemBytes,
		Note: d.Note, Shortfalls: d.Shortfalls}
	if d.Placed && a != nil {
		o.Placed, o.Speedup, o.Demoted, o.Reverted = true, a.Speedup, a.Demoted, a.Reverted
		if a.Reverted {
			o.Note += "; later reverted to fair share to make room"
		}
		for _, sa := range a.Servers {
			o.Servers = append(o.Servers, ServerShare{Server: r.cluster.Servers[sa.Server].Name, GPUs: sa.GPUs, CPUs: sa.CPUs, MemBytes: sa.MemBytes})
			o.CPUs += sa.CPUs
			o.MemBytes += sa.MemBytes
		}
	}
	o.Reason = Decision{Note: o.Note, Shortfalls: o.Shortfalls}.Reason()
	return o
}

// queueWarnings lists the jobs' own warnings (clamped sensitivity) and the
// jobs larger than the cluster.
func queueWarnings(jobs []*Job, c *Cluster) []string {
	out := []string{}
	for _, j := range jobs {
		for _, w := range j.Warnings {
			out = append(out, fmt.Sprintf("job %d (%s): %s", j.ID, j.Model, w))
		}
	}
	total := c.Totals().GPUs
	for _, j := range jobs {
		if j.GPUs > total {
			out = append(out, fmt.Sprintf("job %d (%s) needs %d GPUs; the cluster has %d", j.ID, j.Model, j.GPUs, total))
		}
	}
	return out
}
