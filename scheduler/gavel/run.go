package gavel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Workload is where jobs come from: a trace (all jobs known) or Gavel's
// generator (jobs drawn as simulated time passes their arrival).
type Workload struct {
	Trace     []Job      // a trace, in arrival order
	Generator *Generator // or the generator
}

// arrivals reads the workload through the shared arrivals (read one
// ahead): the trace's jobs in order, or the generator's until its NumJobs
// (none for a continuous one).
func (w Workload) arrivals() (*simcore.Arrivals[Job], error) {
	read := func() (Job, bool, error) {
		g := w.Generator
		if g.NumJobs() > 0 && g.Generated() >= g.NumJobs() {
			return Job{}, false, nil
		}
		return g.Next(), true, nil
	}
	if w.Trace != nil {
		q := w.Trace
		read = func() (Job, bool, error) {
			if len(q) == 0 {
				return Job{}, false, nil
			}
			j := q[0]
			q = q[1:]
			return j, true, nil
		}
	}
	return simcore.NewArrivals(read, func(j Job) float64 { return j.ArrivalS })
}

// Run simulates policy on the workload with Gavel's round mechanism.
func Run(ctx context.Context, cfg Config, tp *Throughputs, w Workload, policy Policy) (*simcore.Result, error) {
	s := newSimulator(cfg, policy)
	if w.Trace == nil && w.Generator == nil {
		return nil, fmt.Errorf("no workload")
	}
	if cfg.Prices != nil {
		if cfg.Ideal {
			return nil, fmt.Errorf("prices: cost is charged per micro-task, which ideal mode does not run")
		}
		if err := cfg.Prices.Check(s.types); err != nil {
			return nil, err
		}
	}
	if w.Generator != nil {
		if err := checkRunnable(cfg.Cluster, tp, Workload{}, &w.Generator.cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Shaper != nil && (cfg.Ideal || s.packing != nil) {
		return nil, fmt.Errorf("CPUs and memory per job (a shaper) need the round mechanism with single jobs: not with ideal mode or the packing policy %s", policy.Name())
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

// loopState is the main loop's state (Gavel's simulate locals).
type loopState struct {
	tp                   *Throughputs
	arr                  *simcore.Arrivals[Job] // the jobs still to arrive
	g                    *Generator             // the generator, if the workload is one
	remaining            int
	run                  []running
	order                []int // advance's completion order, reused
	roundStart, roundEnd float64
	haveEnd              bool
	next                 float64
	haveNext             bool
}

// loop is the main loop of Gavel's Scheduler.simulate, run by the shared
// round loop (simcore.Loop) with this engine's phases (rounds): the exit
// test, the clock's advance to the round's last micro-task, arrivals, and
// the round's allocation, placement and micro-tasks.
func (s *simulator) loop(ctx context.Context, tp *Throughputs, w Workload) error {
	arr, err := w.arrivals()
	if err != nil {
		return err
	}
	l := &loopState{tp: tp, arr: arr, g: w.Generator, remaining: len(w.Trace), haveNext: true}
	if l.g != nil && l.g.NumJobs() > 0 {
		l.remaining = l.g.NumJobs()
	}
	first, _ := arr.Next()
	if l.next = first.ArrivalS; w.Trace != nil {
		s.clock = simcore.NewClock(first.ArrivalS)
	}
	out, err := simcore.Loop(ctx, &rounds{s: s, l: l}, simcore.Limits{MaxS: s.cfg.MaxS, CheckEvery: 64, Progress: s.loopProgress()})
	s.res.Rounds += out.Rounds
	s.res.Truncated = out.Truncated
	if errors.Is(err, simcore.ErrStalled) {
		err = fmt.Errorf("%w: %d active jobs (Gavel's simulator loops forever here)", err, len(s.active))
	}
	return err
}

// rounds is Gavel's part of the shared round loop (simcore.Rounds).
type rounds struct {
	s *simulator
	l *loopState
}

var _ simcore.Rounds = (*rounds)(nil)

// Over is Gavel's exit test (finished), before the round's advance.
func (r *rounds) Over() bool { return r.s.finished(r.l) }

// Clock is the run's clock.
func (r *rounds) Clock() *simcore.Clock { return r.s.clock }

// Admit adds the jobs that have arrived by now.
func (r *rounds) Admit(ctx context.Context) error { return r.s.admit(ctx, r.l) }

// Advance completes the running round's micro-tasks and names its end
// (its latest micro-task), where the loop moves the clock.
func (r *rounds) Advance() (float64, error) { return r.s.advance(r.l), nil }

// Round dispatches the round. A round that runs nothing while jobs are
// active and none is due to arrive is Waited: the shared loop fails a run
// of such rounds that leave the clock where it was (simcore.ErrStalled),
// where Gavel's simulator loops forever.
func (r *rounds) Round() (simcore.Step, float64, error) {
	s, l := r.s, r.l
	now := s.clock.Now()
	if err := s.dispatch(l); err != nil {
		return simcore.End, now, err
	}
	if len(l.run) == 0 && (!l.haveNext || l.next <= now) && len(s.active) > 0 {
		return simcore.Waited, now, nil
	}
	return simcore.Ran, now, nil
}

// finished is the loop's exit test, in Gavel's order: a window's jobs
// done (generated or trace: Gavel's is_done(jobs_to_complete), so a
// windowed replay ends where Gavel's does, not when every job of the trace
// has run), all jobs generated and done (a generator with NumJobs, window
// or not), or every trace job done;
// a trace also looks at its next arrival here, and with nothing running
// and nothing to come forces a reset, as Gavel does. (With a window Gavel
// skips that bookkeeping: its clock then falls back to the trace's first
// arrival whenever nothing runs, and it loops forever. Here the clock
// jumps to the next arrival, as without a window.)
func (s *simulator) finished(l *loopState) bool {
	switch {
	case s.cfg.Window != nil && s.window.Complete(false):
		return true
	case l.g != nil && l.g.NumJobs() > 0 && l.remaining <= 0:
		// Every job generated has ended: a window reaching past
		// --num-jobs can never complete (Gavel's simulator, and this one
		// before, then ran forever with the clock standing still).
		return true
	case l.g != nil && s.cfg.Window != nil:
		return false
	case l.g != nil:
		return l.g.NumJobs() > 0 && l.remaining <= 0
	case l.remaining == 0:
		return true
	case l.hasNext():
		l.haveNext = true
	default:
		l.haveNext = false
		if len(l.run) == 0 {
			s.last = 0
		}
	}
	return false
}

// advance completes the round's micro-tasks, latest first as Gavel's
// heap pops them, and returns the time the clock moves to: the end of the
// round (its latest micro-task), or the next arrival when nothing ran.
func (s *simulator) advance(l *loopState) float64 {
	maxTS := 0.0
	for _, r := range l.run {
		maxTS = math.Max(maxTS, r.finish)
	}
	to := s.clock.Now()
	if maxTS > 0 {
		if l.haveEnd {
			l.roundStart = l.roundEnd
		}
		l.roundEnd, l.haveEnd = maxTS, true
		to = maxTS
	} else if l.haveNext && l.next > to {
		// Nothing ran: the clock jumps to the next arrival. A generator
		// whose jobs have all arrived names where its next one would
		// have (0 for a static one): the clock stays, and a run that
		// can never progress stalls there (simcore.ErrStalled).
		to = l.next
	}
	// The micro-tasks complete latest first (ties by key): an order of
	// indices is sorted, not the tasks themselves.
	run := l.run
	order := l.order[:0]
	for i := range run {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := &run[a], &run[b]
		switch {
		case ra.finish != rb.finish:
			return -cmp.Compare(ra.finish, rb.finish)
		case ra.key.less(rb.key):
			return -1
		case rb.key.less(ra.key):
			return 1
		}
		return 0
	})
	l.order = order
	for _, i := range order {
		r := run[i]
		if !s.anyActive(r.key) {
			continue
		}
		s.complete(r, l.roundStart)
		for _, m := range r.key.members() {
			if _, active := s.jobs[m]; !active {
				l.remaining--
			}
		}
	}
	l.run = run[:0]
	return to
}

// admit adds the jobs that have arrived by now. The generator's next
// arrival (l.next) follows each admission: after its last job, the time its
// successor would have arrived, as Gavel's loop reads it; a trace's is read
// at the top of the next round (finished).
func (s *simulator) admit(ctx context.Context, l *loopState) error {
	err := l.arr.Due(ctx, s.clock.Now(), func(j Job) error { return s.addJob(j, l.tp, j.ArrivalS) })
	if err == nil && l.g != nil {
		if !l.hasNext() {
			l.next = l.g.NextArrival()
		}
	}
	return err
}

// hasNext says whether a job is still to arrive; if so, l.next is set to
// its arrival time.
func (l *loopState) hasNext() bool {
	j, ok := l.arr.Next()
	if ok {
		l.next = j.ArrivalS
	}
	return ok
}

// dispatch schedules the next round, counts lease extensions as Gavel
// does, and starts the round's micro-tasks.
func (s *simulator) dispatch(l *loopState) error {
	out, err := s.scheduleRound()
	if err != nil {
		return err
	}
	prev := s.prevBuf // scheduleRound's, by key: s.cur's
	clear(prev)
	for _, a := range s.cur {
		if s.anyActive(a.key) {
			s.leaseOpp++
		}
		prev[a.key] = a
	}
	for _, a := range out {
		if p, ok := prev[a.key]; ok && sameSet(p.workers, a.workers) {
			s.leaseExt++
		}
	}
	s.cur = out
	factors, err := s.shape(out)
	if err != nil {
		return err
	}
	for i, a := range out {
		f := 1.0
		if factors != nil {
			f = factors[i]
		}
		steps, fin, err := s.stepsAndFinish(s.entryOf(a.key), s.wtype[a.workers[0]], f)
		if err != nil {
			return err
		}
		l.run = append(l.run, running{a.key, a.workers, steps, fin})
		if s.cfg.Log != nil {
			fmt.Fprintf(s.cfg.Log, "[%v] job %v %s workers %v\n", s.clock.Now(), a.key.members(), s.types[s.wtype[a.workers[0]]], a.workers)
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

// sameSet says whether a and b hold the same workers: as many, and each
// of b in a (a micro-task's workers are a few distinct GPUs).
func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// loopProgress is the shared loop's progress hook: Config.Progress with no
// note (nil without it).
func (s *simulator) loopProgress() func(int, float64) {
	if s.cfg.Progress == nil {
		return nil
	}
	return func(rounds int, nowS float64) { s.cfg.Progress(rounds, nowS, "") }
}
