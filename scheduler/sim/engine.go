package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
)

// Window is an inclusive range of job ids over which results are
// summarised (Synergy's series_id_filter, 4000–4999 by default).
type Window struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

// All is the window that holds every job.
var All = Window{First: 0, Last: math.MaxInt32}

// Has reports whether id is in the window.
func (w Window) Has(id int) bool { return id >= w.First && id <= w.Last }

// DefaultWindow is the window results are summarised over when none is
// given: Synergy's 4000–4999 for a generated workload (its steady state:
// the cluster has filled and the tail has not drained), and every job for
// a replay (a trace, or a log at its own arrival times).
func DefaultWindow(replay bool) Window {
	if replay {
		return All
	}
	return Window{First: 4000, Last: 4999}
}

// ParseWindow reads "FIRST-LAST" (0 <= FIRST <= LAST) or "all"; an empty
// string is DefaultWindow(replay).
func ParseWindow(s string, replay bool) (Window, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return DefaultWindow(replay), nil
	case "all":
		return All, nil
	}
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return Window{}, fmt.Errorf("%q is not FIRST-LAST with 0 <= FIRST <= LAST, or all", s)
	}
	return Window{First: first, Last: last}, nil
}

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
	Window Window
	// StarvationSeconds raises a job's priority when it has not run for
	// this long (Synergy: 1000 h).
	StarvationSeconds float64
	// FirstRoundAtZero starts rounds at t=0 (the generator) instead of at
	// the first round boundary at or after the first job's arrival (a
	// replayed trace).
	FirstRoundAtZero bool
	// StopWhenIdle ends the run at the first round boundary with no
	// runnable job, even when more jobs are still to arrive: the original's
	// behaviour when replaying a trace (schedule_event.py), kept only for
	// comparisons with it. Off, the clock jumps to the next arrival.
	StopWhenIdle bool
	// MaxRounds stops a run that would not end; 0 means 10 million.
	MaxRounds int
	// OnRound, when set, is called after every round (tests check
	// invariants with it; it must not keep r).
	OnRound func(nowS float64, r *scheduler.Round, queue []*scheduler.Active)
}

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

// Run simulates src on cfg and returns the result.
func Run(cfg Config, src Source) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.StarvationSeconds == 0 {
		cfg.StarvationSeconds = DefaultStarvationSeconds
	}
	maxRounds := cfg.MaxRounds
	if maxRounds == 0 {
		maxRounds = 10_000_000
	}
	c := cfg.Cluster
	shape := scheduler.ShapeOf(c)
	totals := c.Totals()
	R := cfg.RoundSeconds
	largest := false
	if lf, ok := cfg.Strategy.(scheduler.LargestFirst); ok {
		largest = lf.LargestFirst()
	}
	fairRates := cfg.Strategy.FairRates()

	// The next job to arrive, fetched only after the previous one arrived.
	var pending *scheduler.Job
	more := true
	fetch := func() error {
		if !more || pending != nil {
			return nil
		}
		j, ok := src.Next()
		if !ok {
			more = false
			return nil
		}
		if err := j.Validate(); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		if j.GPUs > totals.GPUs {
			return fmt.Errorf("simulate: job %d needs %d GPUs; the cluster has %d", j.ID, j.GPUs, totals.GPUs)
		}
		pending = j
		return nil
	}
	if err := fetch(); err != nil {
		return nil, err
	}
	if pending == nil {
		return nil, errors.New("simulate: the workload has no jobs")
	}
	now := 0.0
	if !cfg.FirstRoundAtZero {
		// The original starts at the round holding the first job of the
		// list as given (file order), which is the earliest arrival
		// unless the file is unsorted.
		first := pending.ArrivalSeconds
		if l, ok := src.(*List); ok && len(l.Jobs) > 0 {
			first = l.Jobs[0].ArrivalSeconds
		}
		now = math.Ceil(first/R) * R
	}
	var (
		queue      []*scheduler.Active
		ideal      = map[*scheduler.Job]float64{}
		finished   []done
		windowDone int
		windowSeen int
		rounds     int
		util       utilAcc
	)
	index := map[*scheduler.Job]*scheduler.Active{}
	for rounds = 0; rounds < maxRounds; rounds++ {
		// Arrivals at or before now join the queue (arrival events sort
		// before the round's schedule event at equal times).
		for pending != nil && pending.ArrivalSeconds <= now {
			d := scheduler.IdealDemand(pending, shape)
			a := scheduler.NewActive(pending, d.Speedup)
			ideal[pending] = d.Speedup
			index[pending] = a
			queue = append(queue, a)
			if cfg.Window.Has(pending.ID) {
				windowSeen++
			}
			pending = nil
			if err := fetch(); err != nil {
				return nil, err
			}
		}
		if len(queue) == 0 {
			if pending == nil || cfg.StopWhenIdle {
				break
			}
			// Nothing to run: jump to the round holding the next arrival.
			next := math.Ceil(pending.ArrivalSeconds/R) * R
			if next > now {
				util.idle(now, next, R)
				now = next
			}
			continue
		}
		ctx := scheduler.OrderContext{NowSeconds: now, FreeGPUs: totals.GPUs, FairRates: fairRates, LargestFirst: largest}
		offer := scheduler.Offer(cfg.Policy, cfg.Strategy, queue, c, ctx)
		for _, a := range queue {
			since := now - a.Job.ArrivalSeconds
			if a.LastRunEndSeconds >= 0 {
				since = now - a.LastRunEndSeconds
			}
			if since > cfg.StarvationSeconds {
				a.Priority = 1
			}
			a.Speedup = ideal[a.Job]
		}
		r := scheduler.NewRound(c)
		jobs := make([]*scheduler.Job, len(offer))
		for k, a := range offer {
			jobs[k] = a.Job
		}
		placedAny := false
		for _, d := range scheduler.Schedule(r, cfg.Strategy, jobs) {
			placedAny = placedAny || d.Placed
		}
		end := now + R
		r.EachPlacement(func(j *scheduler.Job, al *scheduler.Allocation) {
			a := index[j]
			step := math.Floor(R / (j.IterSeconds / al.Speedup))
			a.Executed += int64(step)
			if a.Executed > j.Iterations {
				a.Executed = j.Iterations
			}
			a.AttainedSeconds += R
			if al.Demoted {
				a.Speedup = 1
			}
			if a.FirstStartSeconds < 0 {
				a.FirstStartSeconds = now
			}
			a.LastRunEndSeconds = end
		})
		if !placedAny && pending == nil && !more {
			a := offer
			if len(a) == 0 {
				a = queue
			}
			return nil, fmt.Errorf("simulate: at %v s no queued job can be placed on an empty cluster (job %d needs %d GPUs)", now, a[0].Job.ID, a[0].Job.GPUs)
		}
		util.add(now, end, r, c, totals)
		if cfg.OnRound != nil {
			cfg.OnRound(now, r, queue)
		}
		// Leases end at now+R; finished jobs leave the queue in order.
		keep := queue[:0]
		for _, a := range queue {
			if a.Executed >= a.Job.Iterations {
				a.FinishSeconds = end
				finished = append(finished, done{id: a.Job.ID, gpus: a.Job.GPUs, model: a.Job.Model, arrival: a.Job.ArrivalSeconds, start: a.FirstStartSeconds, finish: end})
				delete(index, a.Job)
				delete(ideal, a.Job)
				if cfg.Window.Has(a.Job.ID) {
					windowDone++
				}
				continue
			}
			keep = append(keep, a)
		}
		for k := len(keep); k < len(queue); k++ {
			queue[k] = nil
		}
		queue = keep
		now = end
		if windowSeen > 0 && windowDone == windowSeen && windowComplete(cfg.Window, windowSeen, more, pending) {
			rounds++
			break
		}
		if !more && pending == nil && len(queue) == 0 {
			rounds++
			break
		}
	}
	if rounds >= maxRounds {
		return nil, fmt.Errorf("simulate: stopped after %d rounds with %d jobs still queued", maxRounds, len(queue))
	}
	return summarise(cfg, src, finished, rounds, now, &util), nil
}

// windowComplete reports whether no job of the window can still arrive:
// the window's last id has been seen, or the source has ended.
func windowComplete(w Window, seen int, more bool, pending *scheduler.Job) bool {
	if seen == w.Last-w.First+1 {
		return true
	}
	if pending != nil && pending.ID > w.Last {
		return true
	}
	return !more && pending == nil
}

// utilAcc accumulates allocated GPU, CPU and memory over time.
type utilAcc struct {
	points []UtilPoint // one per round
}

func (u *utilAcc) add(from, to float64, r *scheduler.Round, c *scheduler.Cluster, t scheduler.Resources) {
	var used scheduler.Resources
	for i := range c.Servers {
		used = used.Add(r.Used(i))
	}
	u.points = append(u.points, UtilPoint{
		StartS: from, EndS: to,
		GPUPct: 100 * float64(used.GPUs) / float64(t.GPUs),
		CPUPct: 100 * used.CPUs / t.CPUs,
		MemPct: 100 * used.MemBytes / t.MemBytes,
	})
}

func (u *utilAcc) idle(from, to, _ float64) {
	u.points = append(u.points, UtilPoint{StartS: from, EndS: to})
}

// sortDone orders finished jobs by id.
func sortDone(d []done) { sort.Slice(d, func(a, b int) bool { return d[a].id < d[b].id }) }
