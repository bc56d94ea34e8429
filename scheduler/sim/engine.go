package sim

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Config is one simulation.
type Config struct {
	Cluster  *scheduler.Cluster
	Strategy scheduler.Strategy
	Policy   scheduler.Policy
	// RoundSeconds is the lease length (Synergy: 300 s).
	RoundSeconds float64
	// Window selects the jobs results are computed over. With an open
	// workload (a generator without NumJobs) the run ends when every job in
	// the window has finished.
	Window simcore.Window
	// StarvationSeconds raises a job's priority when it has not run for
	// this long (Synergy: 1000 h).
	StarvationSeconds float64
	// FirstRoundAtZero starts rounds at t=0 (the generator) instead of at
	// the first round boundary at or after the first job's arrival (a
	// replayed trace).
	FirstRoundAtZero bool
	// Static is the original's --static: the first round is at t = 1 s
	// (StaticFirstRoundSeconds), so every job arriving in the first second
	// runs in it, and rounds follow every RoundSeconds from there
	// (runner.py's init_event_queue). It overrides FirstRoundAtZero.
	Static bool
	// StopWhenIdle ends the run at the first round boundary with no
	// runnable job, even when more jobs are still to arrive: the original's
	// behaviour when replaying a trace (schedule_event.py), kept only for
	// comparisons with it. Off, the clock jumps to the next arrival.
	StopWhenIdle bool
	// MaxRounds stops a run that would not end; 0 means 10 million.
	MaxRounds int
	// MaxS, when > 0, ends the run once its clock has passed this many
	// simulated seconds (a saturated load that never finishes its window;
	// --max-hours). The result says Truncated and its figures are over the
	// jobs that finished.
	MaxS float64
	// Progress, when set, hears the rounds run and the simulated clock
	// every few seconds of wall-clock time (simcore.Limits.Progress).
	Progress func(rounds int, nowS float64)
	// RunProgress, when set, is what Sweep gives each point's Progress,
	// with the point; it may be called from several goroutines at once.
	RunProgress func(p simcore.Point, rounds int, nowS float64)
	// OnRound, when set, is called after every round (tests check
	// invariants with it; it must not keep r).
	OnRound func(nowS float64, r *scheduler.Round, queue []*scheduler.Active)
}

// StaticFirstRoundSeconds is when the original's --static runs its first
// round (runner.py schedules the first ScheduleEvent at t = 1 s).
const StaticFirstRoundSeconds = 1

// DefaultRoundSeconds is Synergy's round (lease) length.
const DefaultRoundSeconds = 300

// DefaultStarvationSeconds is Synergy's priority bump threshold.
const DefaultStarvationSeconds = 1000 * 3600

func (c *Config) validate() error {
	switch {
	case c.Cluster == nil:
		return errors.New("simulate: no cluster")
	case c.Strategy == nil:
		return errors.New("simulate: no strategy")
	case c.Policy == nil:
		return errors.New("simulate: no policy")
	case c.MaxS < 0 || math.IsNaN(c.MaxS) || math.IsInf(c.MaxS, 0):
		return fmt.Errorf("simulate: time limit %v s: need a finite duration ≥ 0", c.MaxS)
	case !(c.RoundSeconds > 0) || math.IsInf(c.RoundSeconds, 0):
		return fmt.Errorf("simulate: round = %v s: need a positive duration", c.RoundSeconds)
	case c.Window.First > c.Window.Last:
		return fmt.Errorf("simulate: window %d-%d is empty", c.Window.First, c.Window.Last)
	}
	return c.Cluster.Validate()
}

// done is one finished job's record.
type done struct {
	id, gpus               int
	model                  string
	arrival, start, finish float64
}

// RunContext simulates src on cfg and returns the result. Every round has four
// phases: arrive (jobs due by now join the queue), place (the policy
// orders the queue and the strategy places it on the empty cluster),
// credit (each placed job runs the round at its allocation's speed) and
// retire (finished jobs leave the queue at the round's end). The shared
// round loop (simcore.Loop) runs them: arrive is its Admit, and its Round
// places, credits and retires (the original credits a round when it places
// it, so the round ends in the same phase and Advance has nothing to do).
// It looks at ctx before every round and returns ctx's error (wrapped) once
// it is done, with no result.
func RunContext(ctx context.Context, cfg Config, src Source) (*simcore.Result, error) {
	s, err := start(cfg, src)
	if err != nil {
		return nil, err
	}
	maxRounds := cfg.MaxRounds
	if maxRounds == 0 {
		maxRounds = 10_000_000
	}
	out, err := simcore.Loop(ctx, s, simcore.Limits{MaxRounds: maxRounds, MaxS: cfg.MaxS, Progress: cfg.Progress})
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("simulate: stopped at round %d (%.0f s simulated, %d jobs finished): %w", out.Rounds, s.clock.Now(), s.finished.n, ctx.Err())
	case errors.Is(err, simcore.ErrRoundLimit):
		return nil, fmt.Errorf("simulate: stopped after %d rounds with %d jobs still queued", maxRounds, len(s.queue))
	case err != nil:
		return nil, err
	}
	res := summarise(s.cfg, src, &s.finished, s.arrived, out.Rounds, s.clock.Now(), &s.util)
	res.Truncated = out.Truncated
	return res, nil
}

var _ simcore.Rounds = (*run)(nil)

// Over says whether the last round's retire ended the run.
func (s *run) Over() bool { return s.over }

// Clock is the run's clock: the start of the next round.
func (s *run) Clock() *simcore.Clock { return s.clock }

// Advance leaves the clock where it is: a round is credited when placed
// and retired at its lease end by Round.
func (s *run) Advance() (float64, error) { return s.clock.Now(), nil }

// Admit moves the jobs arriving by now into the queue.
func (s *run) Admit(ctx context.Context) error { return s.arrive(ctx) }

// Round places, credits and retires one round. With nothing queued the
// clock jumps to the round of the next arrival (Idle), or, with no arrival
// to come or StopWhenIdle, the run ends.
func (s *run) Round() (simcore.Step, float64, error) {
	if len(s.queue) == 0 {
		if s.pending() == nil || s.cfg.StopWhenIdle {
			return simcore.End, 0, nil
		}
		return simcore.Idle, s.skipIdle(), nil
	}
	r, offer, err := s.place()
	if err != nil {
		return simcore.End, 0, err
	}
	s.credit(r, offer)
	end := s.clock.Now() + s.cfg.RoundSeconds
	s.over = s.retire(end)
	return simcore.Ran, end, nil
}

// run is one simulation's state between rounds.
type run struct {
	cfg    Config
	src    Source
	shape  scheduler.Shape
	totals scheduler.Resources
	// order carries the strategy's FairRates and LargestFirst; each round
	// sets its clock, and whether the queue is in arrival order.
	order scheduler.OrderContext
	// byArrival is set when the policy orders by arrival (FIFO); then
	// inArrivalOrder says whether the queue still is in that order (the
	// policy's order, kept by retire, and arrivals no earlier than the
	// queue's last job), so the policy need not read it.
	byArrival, inArrivalOrder bool
	// arrivals is the source read one ahead: its next job is the next to
	// arrive (fetched only after the previous one arrived).
	arrivals *simcore.Arrivals[*scheduler.Job]
	// clock is the run's, moved by the shared loop: the start of the next
	// round.
	clock *simcore.Clock
	// origin is a round boundary all others are whole rounds from (0, or
	// StaticFirstRoundSeconds).
	origin float64
	queue  []*scheduler.Active
	// round is every round's placements, reset between rounds.
	round *scheduler.Round
	// index finds a queued job's state when a strategy commits its
	// placements out of the order offered (activeOf, which makes it the
	// first time; nil until then).
	index    map[*scheduler.Job]*scheduler.Active
	finished doneLog
	// readSum keeps readAhead's reads.
	readSum float64
	// finishing lists the jobs credit saw finish this round, in the order
	// offered; retire takes them out of the queue.
	finishing []*scheduler.Active
	// window counts the window's jobs as they arrive and finish; over is
	// set once a round's retire has ended the run.
	window  simcore.WindowCount
	over    bool
	arrived int
	util    utilAcc
}

// start checks cfg, fetches the first job and sets the clock to the first
// round.
func start(cfg Config, src Source) (*run, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.StarvationSeconds == 0 {
		cfg.StarvationSeconds = DefaultStarvationSeconds
	}
	s := &run{cfg: cfg, src: src, shape: scheduler.ShapeOf(cfg.Cluster), totals: cfg.Cluster.Totals(),
		window: simcore.WindowCount{Window: cfg.Window}}
	s.order = scheduler.NewOrderContext(cfg.Strategy, 0, s.totals.GPUs)
	if p, ok := cfg.Policy.(scheduler.ArrivalOrder); ok && p.OrdersByArrival() {
		s.byArrival, s.inArrivalOrder = true, true
	}
	var err error
	if s.arrivals, err = simcore.NewArrivals(s.read, func(j *scheduler.Job) float64 { return j.ArrivalSeconds }); err != nil {
		return nil, err
	}
	if s.pending() == nil {
		return nil, errors.New("simulate: the workload has no jobs")
	}
	switch {
	case cfg.Static:
		s.origin = StaticFirstRoundSeconds
		s.clock = simcore.NewClock(s.origin)
	case !cfg.FirstRoundAtZero:
		// The original starts at the round holding the first job of the
		// list as given (file order), which is the earliest arrival
		// unless the file is unsorted.
		first := s.pending().ArrivalSeconds
		if l, ok := src.(*List); ok && len(l.Jobs) > 0 {
			first = l.Jobs[0].ArrivalSeconds
		}
		s.clock = simcore.NewClock(math.Ceil(first/cfg.RoundSeconds) * cfg.RoundSeconds)
	default:
		s.clock = simcore.NewClock(0)
	}
	return s, nil
}

// read is the source's next job, checked (Arrivals reads through it).
func (s *run) read() (*scheduler.Job, bool, error) {
	j, ok := s.src.Next()
	if !ok {
		return nil, false, nil
	}
	if err := j.Validate(); err != nil {
		return nil, false, fmt.Errorf("simulate: %w", err)
	}
	if j.GPUs > s.totals.GPUs {
		return nil, false, fmt.Errorf("simulate: job %d needs %d GPUs; the cluster has %d", j.ID, j.GPUs, s.totals.GPUs)
	}
	return j, true, nil
}

// pending is the next job to arrive, nil once the source has ended.
func (s *run) pending() *scheduler.Job {
	j, _ := s.arrivals.Next()
	return j
}

// arrive moves the jobs arriving at or before now into the queue (arrival
// events sort before the round's schedule event at equal times; Arrivals
// looks at ctx every 4,096 jobs: a trace may bring millions at once).
func (s *run) arrive(ctx context.Context) error {
	return s.arrivals.Due(ctx, s.clock.Now(), func(j *scheduler.Job) error {
		if s.arrived >= MaxJobs {
			return fmt.Errorf("t=%.0f s: more than %d jobs arrived (sim.MaxJobs): a window that a saturated load never finishes? --max-hours bounds the run", s.clock.Now(), MaxJobs)
		}
		a := scheduler.NewActive(j, scheduler.IdealDemand(j, s.shape).Speedup)
		if n := len(s.queue); n > 0 && j.ArrivalSeconds < s.queue[n-1].Job.ArrivalSeconds {
			s.inArrivalOrder = false
		}
		if s.index != nil {
			s.index[j] = a
		}
		s.queue = append(s.queue, a)
		s.arrived++
		s.window.Arrive(j.ID)
		return nil
	})
}

// skipIdle is where the clock jumps when nothing is queued: the round
// holding the next arrival (the clock's time when that has begun).
func (s *run) skipIdle() float64 {
	R, now := s.cfg.RoundSeconds, s.clock.Now()
	next := s.origin + math.Ceil((s.pending().ArrivalSeconds-s.origin)/R)*R
	if next <= now {
		return now
	}
	s.util.idle(now, next, R)
	return next
}

// place orders the queue, raises the priority of starved jobs, and places
// the offered jobs on an empty cluster. It fails when nothing can ever be
// placed (nothing placed, and no job left to arrive).
func (s *run) place() (*scheduler.Round, []*scheduler.Active, error) {
	now, starved := s.clock.Now(), s.cfg.StarvationSeconds
	s.order.NowSeconds = now
	s.order.InArrivalOrder = s.byArrival && s.inArrivalOrder
	offer := scheduler.Offer(s.cfg.Policy, s.cfg.Strategy, s.queue, s.cfg.Cluster, s.order)
	s.inArrivalOrder = s.byArrival // the policy sorted the queue by arrival
	// The job itself is read only when it has never run, and a field is
	// written only when it changes: this reads every queued job's state
	// every round, and most of it stays as it was.
	for _, a := range s.queue {
		since := now - a.LastRunEndSeconds
		if a.LastRunEndSeconds < 0 {
			since = now - a.Job.ArrivalSeconds
		}
		if since > starved && a.Priority != 1 {
			a.Priority = 1
		}
		if a.Speedup != a.IdealSpeedup {
			a.Speedup = a.IdealSpeedup
		}
	}
	r := s.round
	if r == nil {
		r = scheduler.NewRound(s.cfg.Cluster)
		s.round = r
	} else {
		r.Reset()
	}
	placed := scheduler.SchedulePlaced(r, s.cfg.Strategy, offer)
	if placed == 0 && s.pending() == nil {
		a := offer
		if len(a) == 0 {
			a = s.queue
		}
		return nil, nil, fmt.Errorf("simulate: at %v s no queued job can be placed on an empty cluster (job %d needs %d GPUs)", s.clock.Now(), a[0].Job.ID, a[0].Job.GPUs)
	}
	return r, offer, nil
}

// credit runs each placed job for the round: floor(round / (iteration
// time / speed-up)) iterations, attained service, first start and lease
// end; then records the round's utilisation. offer is the round's offer.
func (s *run) credit(r *scheduler.Round, offer []*scheduler.Active) {
	R := s.cfg.RoundSeconds
	end := s.clock.Now() + R
	k, ahead := 0, 0
	r.EachPlacement(func(j *scheduler.Job, al *scheduler.Allocation) {
		if k >= ahead {
			ahead = s.readAhead(offer, k)
		}
		a := s.activeOf(j, offer, &k)
		step := math.Floor(R / (j.IterSeconds / al.Speedup))
		a.Executed += int64(step)
		if a.Executed >= j.Iterations {
			a.Executed = j.Iterations
			s.finishing = append(s.finishing, a)
		}
		a.AttainedSeconds += R
		if al.Demoted {
			a.Speedup = 1
		}
		if a.FirstStartSeconds < 0 {
			a.FirstStartSeconds = s.clock.Now()
		}
		a.LastRunEndSeconds = end
	})
	s.util.add(s.clock.Now(), end, r, s.cfg.Cluster, s.totals)
	if s.cfg.OnRound != nil {
		s.cfg.OnRound(s.clock.Now(), r, s.queue)
	}
}

// readAhead reads the state of the 64 jobs offered from k on, in a loop of
// independent loads, so that credit's reads of them are not one memory
// fetch at a time; it returns where it stopped.
func (s *run) readAhead(offer []*scheduler.Active, k int) int {
	end := min(k+64, len(offer))
	sum := 0.0
	for _, a := range offer[k:end] {
		sum += a.Job.IterSeconds + a.AttainedSeconds
	}
	s.readSum = sum
	return end
}

// activeOf is placed job j's state. Strategies placing one job at a time
// commit in the order offered, so a cursor k over offer finds each at
// once; a batch strategy's order may differ (the index finds those).
func (s *run) activeOf(j *scheduler.Job, offer []*scheduler.Active, k *int) *scheduler.Active {
	for ; *k < len(offer); *k++ {
		if a := offer[*k]; a.Job == j {
			*k++
			return a
		}
	}
	if s.index == nil {
		// Made at the first placement out of the order offered (a batch
		// strategy's), kept from then on.
		s.index = make(map[*scheduler.Job]*scheduler.Active, len(s.queue))
		for _, a := range s.queue {
			s.index[a.Job] = a
		}
	}
	return s.index[j]
}

// retire ends the round's leases at end: finished jobs leave the queue in
// order (the loop then moves the clock to end). It reports whether the run
// is over: the window's jobs have all finished and no more of them can
// arrive, or every job has.
func (s *run) retire(end float64) bool {
	if len(s.finishing) > 0 {
		s.dropFinished(end)
	}
	if s.window.Complete(s.windowClosed()) {
		return true
	}
	return s.pending() == nil && len(s.queue) == 0
}

// dropFinished takes the jobs that finished this round out of the queue.
// Only a job credited this round can have finished, and credit listed
// those in the order offered: when that is the queue's order (FIFO offers
// the queue itself), one walk comparing pointers finds them all, without
// reading the other jobs' state; otherwise the jobs it did not find are
// looked for by their state.
func (s *run) dropFinished(end float64) {
	fin, next := s.finishing, 0
	keep := s.queue[:0]
	for _, a := range s.queue {
		if next < len(fin) && a == fin[next] {
			next++
			s.finish(a, end)
			continue
		}
		keep = append(keep, a)
	}
	if next < len(fin) {
		rest := keep[:0]
		for _, a := range keep {
			if a.Executed < a.Job.Iterations {
				rest = append(rest, a)
				continue
			}
			s.finish(a, end)
		}
		keep = rest
	}
	clear(s.queue[len(keep):])
	s.queue = keep
	clear(s.finishing)
	s.finishing = s.finishing[:0]
}

// finish records queued job a as finished at end.
func (s *run) finish(a *scheduler.Active, end float64) {
	a.FinishSeconds = end
	s.finished.add(done{id: a.Job.ID, gpus: a.Job.GPUs, model: a.Job.Model, arrival: a.Job.ArrivalSeconds, start: a.FirstStartSeconds, finish: end})
	delete(s.index, a.Job) // nil until activeOf needs it
	s.window.Finish(a.Job.ID)
}

// windowClosed reports whether no job of the window can still arrive: the
// source has ended, or its next job is past the window's last id.
func (s *run) windowClosed() bool {
	if j := s.pending(); j != nil {
		return j.ID > s.cfg.Window.Last
	}
	return true
}

// utilAcc accumulates allocated GPU, CPU and memory over time.
type utilAcc struct {
	points []simcore.UtilPoint // one per round
}

func (u *utilAcc) add(from, to float64, r *scheduler.Round, c *scheduler.Cluster, t scheduler.Resources) {
	var used scheduler.Resources
	for i := range c.Servers {
		used = used.Add(r.Used(i))
	}
	u.points = append(u.points, simcore.UtilPoint{
		StartS: from, EndS: to,
		GPUPct: 100 * float64(used.GPUs) / float64(t.GPUs),
		CPUPct: 100 * used.CPUs / t.CPUs,
		MemPct: 100 * used.MemBytes / t.MemBytes,
	})
}

func (u *utilAcc) idle(from, to, _ float64) {
	u.points = append(u.points, simcore.UtilPoint{StartS: from, EndS: to})
}

// doneLog holds finished jobs' records in chunks: a 10,000-GPU run
// finishes 150,000 jobs, and a slice grown by append would be copied, and
// its new memory faulted in, a dozen times over.
type doneLog struct {
	chunks [][]done
	n      int
}

// doneChunk is how many records a chunk of doneLog holds.
const doneChunk = 4096

func (l *doneLog) add(d done) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == doneChunk {
		l.chunks = append(l.chunks, make([]done, 0, doneChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, d)
	l.n++
}

// each calls fn for every record, in the order added.
func (l *doneLog) each(fn func(d *done)) {
	for _, c := range l.chunks {
		for k := range c {
			fn(&c[k])
		}
	}
}
