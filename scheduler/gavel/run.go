package gavel

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Workload is where jobs come from: a trace (all jobs known) or Gavel's
// generator (jobs drawn as simulated time passes their arrival).
type Workload struct {
	Trace     []Job      // a trace, in arrival order
	Generator *Generator // or the generator
}

// Run simulates policy on the workload with Gavel's round mechanism.
func Run(ctx context.Context, cfg Config, tp *Throughputs, w Workload, policy Policy) (*Result, error) {
	s := newSimulator(cfg, policy)
	if w.Trace == nil && w.Generator == nil {
		return nil, fmt.Errorf("no workload")
	}
	run := s.loop
	if cfg.Ideal {
		run = s.runIdeal
	}
	if err := run(ctx, tp, w); err != nil {
		return nil, err
	}
	return s.summarise(), nil
}

// loop is the main loop of Gavel's Scheduler.simulate.
func (s *simulator) loop(ctx context.Context, tp *Throughputs, w Workload) error {
	fromTrace := w.Trace != nil
	remaining := len(w.Trace)
	queue := w.Trace
	g := w.Generator
	if g != nil && g.NumJobs() > 0 {
		remaining = g.NumJobs()
	}
	var run []running
	var roundStart, roundEnd float64
	haveEnd := false
	next, haveNext := 0.0, true
	if fromTrace {
		s.now = queue[0].ArrivalS
		next = queue[0].ArrivalS
	} else {
		next = g.NextArrival()
	}
	stalls := 0
	for iter := 0; ; iter++ {
		if iter%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !fromTrace && s.cfg.Window != nil {
			if s.windowDone() {
				break
			}
		} else if !fromTrace && g.NumJobs() > 0 && remaining <= 0 {
			break
		} else if fromTrace {
			if remaining == 0 {
				break
			}
			if len(queue) > 0 {
				next, haveNext = queue[0].ArrivalS, true
			} else {
				haveNext = false
				if len(run) == 0 {
					s.last = 0
				}
			}
		}
		maxTS := 0.0
		if len(run) > 0 {
			latest := run[0].finish
			for _, r := range run {
				latest = math.Max(latest, r.finish)
			}
			if latest > maxTS {
				maxTS = latest
				if haveEnd {
					roundStart = roundEnd
				}
				roundEnd, haveEnd = maxTS, true
			}
		}
		before := s.now
		if maxTS > 0 {
			s.now = maxTS
		} else if haveNext {
			s.now = next
		}
		sort.SliceStable(run, func(a, b int) bool {
			if run[a].finish != run[b].finish {
				return run[a].finish > run[b].finish
			}
			return run[a].key.less(run[b].key)
		})
		for _, r := range run {
			if !s.anyActive(r.key) {
				continue
			}
			s.complete(r, roundStart)
			for _, m := range r.key.members() {
				if _, active := s.jobs[m]; !active {
					remaining--
				}
			}
		}
		run = run[:0]
		if fromTrace {
			for len(queue) > 0 && queue[0].ArrivalS <= s.now {
				if err := s.addJob(queue[0], tp, queue[0].ArrivalS); err != nil {
					return err
				}
				queue = queue[1:]
			}
		} else {
			for next <= s.now {
				if g.NumJobs() > 0 && g.Generated() >= g.NumJobs() {
					break
				}
				j := g.Next()
				if err := s.addJob(j, tp, j.ArrivalS); err != nil {
					return err
				}
				next = g.NextArrival()
			}
		}
		out, err := s.scheduleRound()
		if err != nil {
			return err
		}
		for _, a := range s.cur {
			if s.anyActive(a.key) {
				s.leaseOpp++
			}
		}
		prev := map[ckey][]int{}
		for _, a := range s.cur {
			prev[a.key] = a.workers
		}
		for _, a := range out {
			if p, ok := prev[a.key]; ok && sameSet(p, a.workers) {
				s.leaseExt++
			}
		}
		s.cur = out
		byKey := map[ckey]*entry{}
		for _, e := range s.entries {
			byKey[e.key] = e
		}
		for _, a := range out {
			steps, fin, err := s.stepsAndFinish(byKey[a.key], s.wtype[a.workers[0]])
			if err != nil {
				return err
			}
			run = append(run, running{a.key, a.workers, steps, fin})
			if s.cfg.Log != nil {
				fmt.Fprintf(s.cfg.Log, "[%v] job %v %s workers %v\n", s.now, a.key.members(), s.types[s.wtype[a.workers[0]]], a.workers)
			}
		}
		s.res.Rounds++
		if len(run) == 0 && s.now == before && (!haveNext || next <= s.now) && len(s.active) > 0 {
			if stalls++; stalls > 2 {
				return fmt.Errorf("t=%.1f s: stalled: %d active jobs, none can run and no job arrives (Gavel's simulator loops forever here)", s.now, len(s.active))
			}
		} else {
			stalls = 0
		}
	}
	return nil
}

func (s *simulator) anyActive(k ckey) bool {
	for _, m := range k.members() {
		if _, ok := s.jobs[m]; ok {
			return true
		}
	}
	return false
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}
