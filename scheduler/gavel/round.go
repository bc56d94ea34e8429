package gavel

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	if s.prevBuf == nil {
		s.prevBuf, s.posBuf = map[ckey]assignment{}, map[ckey]int{}
	}
	prev := s.prevBuf
	clear(prev)
	for _, a := range s.cur {
		prev[a.key] = a
	}
	clear(s.posBuf)
	p := &placement{pos: s.posBuf}
	for _, t := range order {
		if err := s.placeType(t, sched[t], prev, p); err != nil {
			return nil, err
		}
	}
	out := p.out
	if s.cfg.Check {
		if err := s.checkPlacement(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepsAndFinish is Gavel's _get_job_steps_and_finish_times: per member,
// int(throughput × round) steps, at most what remains; the entry finishes
// when its slowest member does. factor scales the throughput (a Shaper's;
// 1 without one).
func (s *simulator) stepsAndFinish(e *entry, t int, factor float64) ([]float64, float64, error) {
	finish := s.clock.Now()
	var steps []float64
	for i, m := range e.key.members() {
		js := s.jobs[m]
		tp := e.tput[t][i] * factor
		if tp <= 0 {
			return nil, 0, fmt.Errorf("job %d has throughput %v on %s", m, tp, s.types[t])
		}
		n := math.Trunc(tp * s.cfg.RoundS)
		if rem := js.job.TotalSteps - js.stepsRun; rem < n {
			n = rem
		}
		steps = append(steps, n)
		finish = math.Max(finish, s.clock.Now()+n/tp)
	}
	return steps, finish, nil
}

// complete is the simulator's completion of one micro-task (Gavel's
// per-worker _done_callback calls, folded): each member's steps split over
// the workers (floor division, the rest to the last); a worker with 0
// steps fails the micro-task, and 5 failures of a single job drop it.
func (s *simulator) complete(r running, roundStart float64) {
	exec := r.finish - roundStart
	members := r.key.members()
	for _, m := range members {
		s.jobs[m].latest = r.finish
	}
	sf := float64(s.jobs[members[0]].job.ScaleFactor)
	ok := exec > 0
	var total [2]float64
	for j := range members {
		var each, last float64
		total[j], each, last = workerSteps(r.steps[j], sf, r.workers)
		ok = ok && last > 0 && (len(r.workers) == 1 || each > 0)
	}
	t := s.wtype[r.workers[0]]
	if !ok {
		if !r.key.isPair() {
			js := s.jobs[r.key.a]
			if js.failures++; js.failures >= maxFailedAttempts {
				s.removeJob(r.key.a, true)
			}
		}
		s.needUpd = true
		return
	}
	s.charge(members, t, exec, sf, roundStart)
	var done []int
	for j, m := range members {
		js := s.jobs[m]
		js.failures = 0
		js.stepsRun += total[j]
		if js.job.TotalSteps-js.stepsRun <= 0 {
			done = append(done, m)
		}
	}
	if e := s.entryOf(r.key); e != nil {
		e.timeSoFar[t] += exec
		s.markDirty(e)
	}
	s.wtime[t] += exec
	for _, w := range r.workers {
		s.cumBusy[w] += exec
	}
	for _, m := range done {
		s.removeJob(m, false)
	}
}

// workerSteps splits one member's steps over its workers as Gavel's
// micro-task does: steps ÷ sf floored (each) to every worker but the last
// of the list, the rest (last) to that one. total is the member's steps
// summed over the workers in worker id order, as the callbacks add them
// (the last of the list sits at its place in that order).
func workerSteps(steps, sf float64, workers []int) (total, each, last float64) {
	n := len(workers)
	each = math.Floor(steps / sf)
	acc := 0.0
	for range n - 1 {
		acc += each
	}
	last = steps - acc
	lw, before := workers[n-1], 0
	for _, w := range workers[:n-1] {
		if w < lw {
			before++
		}
	}
	for k := range n {
		if k == before {
			total += last
		} else {
			total += each
		}
	}
	return total, each, last
}

func (s *simulator) checkPlacement(out []assignment) error {
	used := make([]int, len(s.types))
	seen := map[int]bool{}
	for _, a := range out {
		t := s.wtype[a.workers[0]]
		for _, w := range a.workers {
			if seen[w] {
				return fmt.Errorf("invariant: t=%.1f s: worker %d placed twice", s.clock.Now(), w)
			}
			if s.wtype[w] != t {
				return fmt.Errorf("invariant: t=%.1f s: job %v spans GPU types", s.clock.Now(), a.key.members())
			}
			seen[w] = true
		}
		used[t] += len(a.workers)
	}
	for t, n := range used {
		if n > s.workers[t] {
			return fmt.Errorf("invariant: t=%.1f s: %d %s GPUs used of %d", s.clock.Now(), n, s.types[t], s.workers[t])
		}
	}
	return nil
}

func (s *simulator) checkAllocation(a allocation) error {
	rows := map[int]float64{}
	load := make([]float64, len(s.types))
	all := make(map[ckey][]float64, len(a.single)+len(a.pairs))
	for id, row := range a.single {
		all[single(id)] = row
	}
	for k, row := range a.pairs {
		all[ckey{k[0], k[1]}] = row
	}
	for k, row := range all {
		for t, v := range row {
			if v < -1e-6 || math.IsNaN(v) {
				return fmt.Errorf("invariant: t=%.1f s: %v allocation %v", s.clock.Now(), k.members(), row)
			}
			if js, ok := s.jobs[k.a]; ok {
				load[t] += v * float64(js.job.ScaleFactor)
			}
		}
		for _, m := range k.members() {
			for _, v := range row {
				rows[m] += v
			}
		}
	}
	for id, sum := range rows {
		if sum > 1+1e-6 {
			return fmt.Errorf("invariant: t=%.1f s: job %d's allocation sums to %v > 1", s.clock.Now(), id, sum)
		}
	}
	if n := s.policy.Name(); strings.HasPrefix(n, "FIFO") || n == "Proportional" {
		// Gavel's fifo may allocate a type over its capacity, and its
		// proportional split ignores scale factors; rounds never place
		// over capacity (checkPlacement).
		return nil
	}
	for t := range s.types {
		if load[t] > float64(s.workers[t])*(1+1e-6)+1e-6 {
			return fmt.Errorf("invariant: t=%.1f s: allocation puts %.4f GPUs of load on %d %s GPUs", s.clock.Now(), load[t], s.workers[t], s.types[t])
		}
	}
	return nil
}

// placement is a round's assignments being built, in Gavel's order.
type placement struct {
	out []assignment
	pos map[ckey]int
}

// placeType places one type's selected entries: larger jobs first; per
// size, first the entries that can keep their previous workers (lease
// extension), then the rest, server by server.
func (s *simulator) placeType(t int, jobs []*entry, prev map[ckey]assignment, p *placement) error {
	sfOf := func(e *entry) int { return s.jobs[e.key.a].job.ScaleFactor }
	slices.SortStableFunc(jobs, func(a, b *entry) int { return cmp.Compare(sfOf(b), sfOf(a)) })
	// servers[i][next[i]:] are server i's workers not yet walked past;
	// taken marks the workers given out (cleared on return).
	servers := s.servers[t]
	next := slices.Grow(s.nextBuf[:0], len(servers))[:len(servers)]
	clear(next)
	s.nextBuf = next
	if len(s.taken) < len(s.wtype) {
		s.taken = make([]bool, len(s.wtype))
	}
	taken := s.taken
	defer func() {
		for _, ids := range servers {
			for _, w := range ids {
				taken[w] = false
			}
		}
	}()
	ptr := 0
	var sfs []int
	for _, e := range jobs {
		if sf := sfOf(e); len(sfs) == 0 || sfs[len(sfs)-1] != sf {
			sfs = append(sfs, sf)
		}
	}
	for _, sf := range sfs {
		for _, e := range jobs {
			pa, ok := prev[e.key]
			if sfOf(e) != sf || !ok || s.wtype[pa.workers[0]] != t {
				continue
			}
			free := true
			for _, w := range pa.workers {
				free = free && !taken[w]
			}
			if free {
				p.pos[e.key] = len(p.out)
				p.out = append(p.out, assignment{e.key, pa.workers})
				for _, w := range pa.workers {
					taken[w] = true
				}
			}
		}
		for _, e := range jobs {
			if sfOf(e) != sf || !s.hasRow(e) {
				continue
			}
			var ids []int
			k, had := p.pos[e.key]
			if had {
				ids = p.out[k].workers
			}
			for len(ids) < sf && ptr < len(servers) {
				if next[ptr] == len(servers[ptr]) {
					ptr++
					continue
				}
				if w := servers[ptr][next[ptr]]; !taken[w] {
					ids = append(ids, w)
					taken[w] = true
				}
				next[ptr]++
			}
			if len(ids) != sf {
				return fmt.Errorf("t=%.1f s: could not assign %d %s workers to %v", s.clock.Now(), sf, s.types[t], e.key.members())
			}
			if had {
				p.out[k].workers = ids
			} else {
				p.pos[e.key] = len(p.out)
				p.out = append(p.out, assignment{e.key, ids})
			}
		}
	}
	return nil
}

// charge adds a completed micro-task's cost to each member job, as Gavel's
// _done_callback does: the type's price at the round's start × execution
// hours × scale factor, charged in full to each job of a pair.
func (s *simulator) charge(members []int, t int, execS, sf, roundStart float64) {
	p := s.cfg.Prices
	if p == nil {
		return
	}
	c := p.At(s.types[t], roundStart) * execS / 3600 * sf
	for _, m := range members {
		r := &s.res.Jobs[m]
		if r.Cost == nil {
			r.Cost = new(float64)
		}
		*r.Cost += c
	}
}
