package gavel

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// scheduleRound is Gavel's _schedule_jobs_on_workers: priorities, the
// type order (shuffled each round for heterogeneity-agnostic policies),
// job selection, then placement: per type, larger jobs first, a job keeps
// its previous workers when none of them is taken (lease extension),
// otherwise workers are taken server by server.
func (s *simulator) scheduleRound() ([]assignment, error) {
	if err := s.updatePriorities(); err != nil {
		return nil, err
	}
	order := append([]int(nil), s.order...)
	if n := s.policy.Name(); !strings.Contains(n, "Perf") && !strings.Contains(n, "Packing") {
		s.shuffler.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	sched := s.selectJobs(order)
	prev := map[int]assignment{}
	for _, a := range s.cur {
		prev[a.job] = a
	}
	var out []assignment
	pos := map[int]int{}
	for _, t := range order {
		jobs := sched[t]
		sort.SliceStable(jobs, func(a, b int) bool { return s.jobs[jobs[a]].job.ScaleFactor > s.jobs[jobs[b]].job.ScaleFactor })
		servers := make([][]int, len(s.servers[t]))
		for i := range servers {
			servers[i] = append([]int(nil), s.servers[t][i]...)
		}
		taken := map[int]bool{}
		ptr := 0
		var sfs []int
		for _, id := range jobs {
			sf := s.jobs[id].job.ScaleFactor
			if len(sfs) == 0 || sfs[len(sfs)-1] != sf {
				sfs = append(sfs, sf)
			}
		}
		for _, sf := range sfs {
			for _, id := range jobs {
				p, ok := prev[id]
				if s.jobs[id].job.ScaleFactor != sf || !ok || s.wtype[p.workers[0]] != t {
					continue
				}
				free := true
				for _, w := range p.workers {
					free = free && !taken[w]
				}
				if free {
					pos[id] = len(out)
					out = append(out, assignment{id, p.workers})
					for _, w := range p.workers {
						taken[w] = true
					}
				}
			}
			for _, id := range jobs {
				if s.jobs[id].job.ScaleFactor != sf {
					continue
				}
				if _, ok := s.alloc[id]; !ok {
					continue
				}
				var ids []int
				k, had := pos[id]
				if had {
					ids = out[k].workers
				}
				for len(ids) < sf && ptr < len(servers) {
					if len(servers[ptr]) == 0 {
						ptr++
						continue
					}
					w := servers[ptr][0]
					if !taken[w] {
						ids = append(ids, w)
						taken[w] = true
					}
					servers[ptr] = servers[ptr][1:]
				}
				if len(ids) != sf {
					return nil, fmt.Errorf("t=%.1f s: could not assign %d %s workers to job %d", s.now, sf, s.types[t], id)
				}
				if had {
					out[k].workers = ids
				} else {
					pos[id] = len(out)
					out = append(out, assignment{id, ids})
				}
			}
		}
	}
	if s.cfg.Check {
		if err := s.checkPlacement(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepsAndFinish is Gavel's _get_job_steps_and_finish_times for a single
// job: int(throughput × round) steps, at most what remains.
func (s *simulator) stepsAndFinish(js *jobState, t int) (float64, float64, error) {
	tp := js.tput[t]
	if tp <= 0 {
		return 0, 0, fmt.Errorf("job %d has throughput %v on %s", js.id, tp, s.types[t])
	}
	steps := math.Trunc(tp * s.cfg.RoundS)
	if rem := js.job.TotalSteps - js.stepsRun; rem < steps {
		steps = rem
	}
	finish := s.now + steps/tp
	return steps, math.Max(finish, s.now), nil
}

// complete is the simulator's completion of one micro-task (Gavel's
// per-worker _done_callback calls, folded): steps split over the job's
// workers (floor division, the rest to the last), a micro-task with a
// worker of 0 steps fails, and 5 failures drop the job.
func (s *simulator) complete(r running, roundStart float64) {
	js := s.jobs[r.job]
	exec := r.finish - roundStart
	js.latest = r.finish
	sf := float64(js.job.ScaleFactor)
	type upd struct {
		w     int
		steps float64
	}
	ups := make([]upd, len(r.workers))
	acc := 0.0
	for i, w := range r.workers {
		if i == len(r.workers)-1 {
			ups[i] = upd{w, r.steps - acc}
		} else {
			q := math.Floor(r.steps / sf)
			ups[i] = upd{w, q}
			acc += q
		}
	}
	sort.Slice(ups, func(a, b int) bool { return ups[a].w < ups[b].w })
	ok := true
	total := 0.0
	for _, u := range ups {
		if u.steps <= 0 || exec <= 0 {
			ok = false
		}
		total += u.steps
	}
	t := s.wtype[r.workers[0]]
	if !ok {
		js.failures++
		if js.failures >= maxFailedAttempts {
			s.removeJob(r.job, true)
		}
		s.needUpd = true
		return
	}
	js.failures = 0
	js.stepsRun += total
	done := js.job.TotalSteps-js.stepsRun <= 0
	js.timeSoFar[t] += exec
	s.wtime[t] += exec
	for _, w := range r.workers {
		s.cumBusy[w] += exec
	}
	if done {
		s.removeJob(r.job, false)
	}
}

func (s *simulator) checkPlacement(out []assignment) error {
	used := make([]int, len(s.types))
	seen := map[int]bool{}
	for _, a := range out {
		t := s.wtype[a.workers[0]]
		for _, w := range a.workers {
			if seen[w] {
				return fmt.Errorf("invariant: t=%.1f s: worker %d placed twice", s.now, w)
			}
			if s.wtype[w] != t {
				return fmt.Errorf("invariant: t=%.1f s: job %d spans GPU types", s.now, a.job)
			}
			seen[w] = true
		}
		used[t] += len(a.workers)
	}
	for t, n := range used {
		if n > s.workers[t] {
			return fmt.Errorf("invariant: t=%.1f s: %d %s GPUs used of %d", s.now, n, s.types[t], s.workers[t])
		}
	}
	return nil
}

func (s *simulator) checkAllocation(a Allocation) error {
	for id, row := range a {
		sum := 0.0
		for _, v := range row {
			if v < -1e-6 || math.IsNaN(v) {
				return fmt.Errorf("invariant: t=%.1f s: job %d allocation %v", s.now, id, row)
			}
			sum += v
		}
		if sum > 1+1e-6 {
			return fmt.Errorf("invariant: t=%.1f s: job %d allocation row sums to %v > 1", s.now, id, sum)
		}
	}
	if n := s.policy.Name(); strings.HasPrefix(n, "FIFO") || n == "Proportional" {
		// Gavel's fifo may allocate a type over its capacity, and its
		// proportional split ignores scale factors; rounds never place
		// over capacity (checkPlacement).
		return nil
	}
	for t := range s.types {
		load := 0.0
		for _, id := range s.active {
			if row, ok := a[id]; ok {
				load += row[t] * float64(s.jobs[id].job.ScaleFactor)
			}
		}
		if load > float64(s.workers[t])*(1+1e-6)+1e-6 {
			return fmt.Errorf("invariant: t=%.1f s: allocation puts %.4f GPUs of load on %d %s GPUs", s.now, load, s.workers[t], s.types[t])
		}
	}
	return nil
}
