package gavel

import (
	"fmt"
	"io"
	"sort"
)

// Gavel's simulator constants.
const (
	DefaultRoundS        = 360.0  // time_per_iteration
	DefaultMinResetS     = 1920.0 // minimum_time_between_allocation_resets
	maxFailedAttempts    = 5      // MAX_FAILED_ATTEMPTS
	neverRunPriorityMult = 1e9    // priority of a job that has received no time
)

// Config is one simulation.
type Config struct {
	Cluster   ClusterSpec
	RoundS    float64 // round length (Gavel's 360 s by default)
	MinResetS float64 // allocation recomputed at most this often (1920 s)
	Seed      uint64  // Gavel's --seed: fifo's RNG is seeded with it, the type shuffler with seed+5
	// Window, when set, ends a generated run once jobs First..Last have
	// completed (Gavel's jobs_to_complete) and is what the results average.
	Window *Window
	// Check verifies the invariants every round (no type over capacity,
	// no worker twice, allocation rows ≤ 1 for the non-FIFO policies).
	Check bool
	// Ideal applies the allocation exactly (fluid, no rounds) instead of
	// the round mechanism.
	Ideal bool
	// Log, when set, gets one line per scheduled micro-task ("<t> job <id>
	// <type> workers <ids>") for debugging against Gavel's log.
	Log io.Writer
}

// Window is a range of job ids (inclusive).
type Window struct{ First, Last int }

// Contains says whether id is in the window (a nil window holds every id).
func (w *Window) Contains(id int) bool { return w == nil || (id >= w.First && id <= w.Last) }

type jobState struct {
	id        int
	job       Job
	tput      []float64 // per sorted type
	stepsRun  float64
	start     float64
	latest    float64
	failures  int
	timeSoFar []float64 // per sorted type, since the last reset (starts at round/2)
	priority  []float64
	deficit   []float64
}

type assignment struct {
	job     int
	workers []int
}

type running struct {
	job     int
	workers []int
	steps   float64
	finish  float64
}

// simulator is Gavel's Scheduler in simulation mode, for single jobs (no
// space sharing).
type simulator struct {
	cfg                Config
	policy             Policy
	types              []string // sorted by name: worker registration and allocation order
	order              []int    // round order: indices into types, in cluster spec order
	workers            []int    // GPUs per sorted type
	servers            [][][]int
	wtype              []int // worker id → sorted type index
	cumBusy            []float64
	wtime              []float64 // worker time so far per type, since the last reset
	jobs               map[int]*jobState
	active             []int
	alloc              Allocation
	last               float64 // last reset time
	needUpd            bool
	now                float64
	shuffler           *PyRandom
	cur                []assignment
	leaseExt, leaseOpp int
	res                *Result
	allocs             int
}

func newSimulator(cfg Config, p Policy) *simulator {
	if cfg.RoundS == 0 {
		cfg.RoundS = DefaultRoundS
	}
	if cfg.MinResetS == 0 {
		cfg.MinResetS = DefaultMinResetS
	}
	s := &simulator{cfg: cfg, policy: p, types: cfg.Cluster.sortedTypes(), jobs: map[int]*jobState{},
		alloc: Allocation{}, shuffler: NewPyRandom(cfg.Seed + 5), res: &Result{}}
	idx := map[string]int{}
	for i, t := range s.types {
		idx[t] = i
	}
	byName := map[string]int{}
	for i, t := range cfg.Cluster.Types {
		byName[t] = i
	}
	s.workers = make([]int, len(s.types))
	s.servers = make([][][]int, len(s.types))
	s.wtime = make([]float64, len(s.types))
	for ti, t := range s.types {
		ci := byName[t]
		per := cfg.Cluster.GPUsPerServer[ci]
		for k := 0; k < cfg.Cluster.GPUs[ci]/per; k++ {
			var ids []int
			for g := 0; g < per; g++ {
				ids = append(ids, len(s.wtype))
				s.wtype = append(s.wtype, ti)
			}
			s.servers[ti] = append(s.servers[ti], ids)
			s.workers[ti] += per
		}
	}
	for _, t := range cfg.Cluster.Types {
		if s.workers[idx[t]] > 0 {
			s.order = append(s.order, idx[t])
		}
	}
	s.cumBusy = make([]float64, len(s.wtype))
	return s
}

// addJob is Gavel's add_job at timestamp at.
func (s *simulator) addJob(j Job, tp *Throughputs, at float64) error {
	id := len(s.res.Jobs)
	row, err := tp.Row(j.Key(), s.types)
	if err != nil {
		return fmt.Errorf("job %d: %w", id, err)
	}
	n := len(s.types)
	js := &jobState{id: id, job: j, tput: row, start: at, timeSoFar: make([]float64, n), priority: make([]float64, n), deficit: make([]float64, n)}
	for t := range js.timeSoFar {
		js.timeSoFar[t] = s.cfg.RoundS / 2
	}
	s.jobs[id] = js
	s.active = append(s.active, id)
	s.needUpd = true
	s.res.Jobs = append(s.res.Jobs, JobResult{ID: id, JobType: j.JobType, ScaleFactor: j.ScaleFactor,
		Priority: j.PriorityWeight, ArrivalS: at})
	if j.SLO > 0 && j.DurationS > 0 {
		d := j.SLO*j.DurationS + at
		s.res.Jobs[id].DeadlineS = &d
	}
	return nil
}

func (s *simulator) removeJob(id int, failed bool) {
	js := s.jobs[id]
	delete(s.jobs, id)
	k := sort.SearchInts(s.active, id)
	s.active = append(s.active[:k], s.active[k+1:]...)
	r := &s.res.Jobs[id]
	if failed {
		r.Failed = true
	} else {
		jct := js.latest - js.start
		f := r.ArrivalS + jct
		r.JCTS, r.FinishS = &jct, &f
	}
	s.needUpd = true
}

// state is what the policy sees.
func (s *simulator) state() *State {
	st := &State{Types: s.types, Workers: s.workers, Now: s.now}
	for _, id := range s.active {
		js := s.jobs[id]
		st.Jobs = append(st.Jobs, StateJob{ID: id, Throughput: js.tput, ScaleFactor: js.job.ScaleFactor,
			PriorityWeight: js.job.PriorityWeight, RemainingSteps: js.job.TotalSteps - js.stepsRun,
			TotalSteps: js.job.TotalSteps, TimeSinceStart: s.now - js.start})
	}
	return st
}

// resetTimeRunSoFar is Gavel's _reset_time_run_so_far: deficits take the
// time each job should have had under the allocation minus what it got.
func (s *simulator) resetTimeRunSoFar() {
	elapsed := s.now - s.last
	half := s.cfg.RoundS / 2
	for t := range s.types {
		s.wtime[t] = 0
		for _, id := range s.active {
			js := s.jobs[id]
			received := js.timeSoFar[t] - half
			should := 0.0
			if row, ok := s.alloc[id]; ok {
				should = row[t] * elapsed
			}
			js.deficit[t] += should - received
			js.timeSoFar[t] = half
			s.wtime[t] += half
		}
	}
	s.last = s.now
}

// updatePriorities is Gavel's _update_priorities in simulation.
func (s *simulator) updatePriorities() error {
	need := (s.now-s.last >= s.cfg.MinResetS || s.last == 0) && s.needUpd
	if need {
		s.resetTimeRunSoFar()
		a, err := s.policy.Allocate(s.state())
		if err != nil {
			return fmt.Errorf("t=%.1f s: allocation: %w", s.now, err)
		}
		if a == nil {
			a = Allocation{}
		}
		if s.cfg.Check {
			if err := s.checkAllocation(a); err != nil {
				return err
			}
		}
		s.alloc = a
		s.allocs++
		s.needUpd = false
	}
	for t := range s.types {
		for _, id := range s.active {
			js := s.jobs[id]
			frac := 0.0
			if s.wtime[t] != 0 {
				frac = js.timeSoFar[t] / s.wtime[t]
			}
			row, ok := s.alloc[id]
			if !ok {
				js.priority[t] = 0
				continue
			}
			p := row[t] * neverRunPriorityMult
			switch {
			case row[t] == 0:
				p = 0
			case js.tput[t] == 0:
				p = 0
			case frac > 0:
				p = row[t] / frac
			}
			js.priority[t] = p
		}
	}
	return nil
}

type queued struct {
	job, t                    int
	prio, deficit, allocation float64
}

// selectJobs is Gavel's _schedule_jobs_on_workers_helper: per type in
// order, jobs by decreasing (priority, deficit, allocation), greedily while
// GPUs of the type remain, no job twice.
func (s *simulator) selectJobs(order []int) [][]int {
	left := append([]int(nil), s.workers...)
	var q []queued
	for _, t := range order {
		start := len(q)
		for _, id := range s.active {
			js := s.jobs[id]
			a := 0.0
			if row, ok := s.alloc[id]; ok {
				a = row[t]
			}
			q = append(q, queued{id, t, js.priority[t], js.deficit[t], a})
		}
		part := q[start:]
		sort.SliceStable(part, func(i, j int) bool {
			a, b := part[i], part[j]
			if a.prio != b.prio {
				return a.prio > b.prio
			}
			if a.deficit != b.deficit {
				return a.deficit > b.deficit
			}
			return a.allocation > b.allocation
		})
	}
	fifo := len(s.policy.Name()) >= 4 && s.policy.Name()[:4] == "FIFO"
	done := map[int]bool{}
	sched := make([][]int, len(s.types))
	for _, e := range q {
		js := s.jobs[e.job]
		switch {
		case left[e.t] == 0, done[e.job], js.tput[e.t] <= 0, fifo && e.prio <= 0, js.job.ScaleFactor > left[e.t]:
			continue
		}
		left[e.t] -= js.job.ScaleFactor
		done[e.job] = true
		sched[e.t] = append(sched[e.t], e.job)
	}
	return sched
}
