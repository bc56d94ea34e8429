package slurm

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Move is a running job a round takes off its node: moved or resized
// (To set) or paused (To nil).
type Move struct {
	Job  Job
	From *Placement
	To   *Placement
	Why  string
}

// RoundPlan is one round's decisions over every job that opted in,
// running and held: the scheduler's own round (scheduler.Offer, then
// scheduler.SchedulePlaced on the cluster less what other jobs hold, as
// `synergy simulate` runs each round) with each job's attained service.
type RoundPlan struct {
	Cluster  scheduler.Cluster
	Excluded []string
	// Keep are running jobs whose placement is unchanged: they run on.
	Keep []Job
	// Moves are running jobs to preempt (Bridge.Preempt), and where they go.
	Moves []Move
	// Place, Wait and Resume are held jobs' actions, as a pass's.
	Actions []Action
	// Attained is each job's attained service (seconds) the policy saw.
	Attained map[int]float64
}

// PlanRound decides one round at now over snap. The jobs that opted in are
// the held ones a pass would queue and the running ones the bridge placed
// (a synergy:placed mark); every other running job, and jobs placed but
// not yet released, hold their resources. A running job left marked
// "preempted" by a bridge killed mid-preemption is preempted again.
func PlanRound(snap Snapshot, cfg Config, now time.Time) (RoundPlan, error) {
	plan := RoundPlan{Attained: map[int]float64{}}
	plan.Cluster, plan.Excluded = clusterOf(cfg, snap.Nodes)
	running, queue, held := classify(snap, cfg, &plan)
	if len(plan.Cluster.Servers) == 0 {
		for _, q := range queue {
			plan.Actions = append(plan.Actions, wait(q.job, q.mark, "no node with GPUs to place on"))
		}
		return plan, nil
	}
	others := othersOf(&plan.Cluster, snap.Nodes, held, running)
	r, err := others.round()
	if err != nil {
		return plan, err
	}
	shape := scheduler.ShapeOf(&plan.Cluster)
	load := cfg.LoadProfile
	if load == nil {
		load = sensitivity.LoadFilled
	}
	var actives []*scheduler.Active
	byJob := map[*scheduler.Job]queued{}
	for _, m := range append(slices.Clone(running), queue...) {
		j, why := schedJob(len(actives), m, shape, load)
		if why != "" {
			if m.job.State == "RUNNING" {
				plan.Moves = append(plan.Moves, Move{Job: m.job, From: m.mark.Placed, Why: why})
			} else {
				plan.Actions = append(plan.Actions, wait(m.job, m.mark, why))
			}
			continue
		}
		j.ArrivalSeconds = float64(m.job.SubmitTime)
		a := scheduler.NewActive(j, scheduler.IdealDemand(j, shape).Speedup)
		a.AttainedSeconds = Attained(m.mark, m.job, now)
		plan.Attained[m.job.ID] = a.AttainedSeconds
		actives = append(actives, a)
		byJob[j] = m
	}
	policy := cfg.Policy
	if policy == nil {
		policy = scheduler.FIFO{}
	}
	offer := scheduler.Offer(policy, cfg.Strategy, actives, &plan.Cluster, scheduler.NewOrderContext(cfg.Strategy, float64(now.Unix()), r.FreeGPUs()))
	scheduler.SchedulePlaced(r, cfg.Strategy, offer)
	placed := map[int]*scheduler.Allocation{}
	r.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) { placed[byJob[j].job.ID] = a })
	at, keep, free, err := stayPut(&plan.Cluster, others, cfg.Strategy, offer, byJob, placed)
	if err != nil {
		return plan, err
	}
	for _, a := range actives {
		decideRound(&plan, byJob[a.Job], a.Job.GPUs, free, keep, placed, at)
	}
	return plan, nil
}

// classify sorts snap's jobs for a round: opted-in running jobs, held jobs
// to queue, and placements of jobs placed but not released (Resume actions
// go to plan); running jobs left marked preempted are preempted again.
func classify(snap Snapshot, cfg Config, plan *RoundPlan) (running, queue []queued, held []Placement) {
	jobs := slices.Clone(snap.Jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Or(cmp.Compare(a.SubmitTime, b.SubmitTime), cmp.Compare(a.ID, b.ID)) })
	for _, j := range jobs {
		if cfg.Partition != "" && j.Partition != cfg.Partition {
			continue
		}
		m, err := ParseMark(j.Comment)
		switch {
		case j.State == "RUNNING" && err == nil && m.Profile != "" && m.Placed != nil:
			running = append(running, queued{j, m})
		case j.State == "RUNNING" && err == nil && m.Profile != "" && strings.HasPrefix(m.Waiting, "preempted"):
			plan.Moves = append(plan.Moves, Move{Job: j, Why: "its preemption was interrupted"})
		case j.State != "PENDING":
		case err != nil && j.Held() && (m.Profile != "" || cfg.Partition != ""):
			plan.Actions = append(plan.Actions, wait(j, m, "cannot read the comment: "+err.Error()))
		case err != nil:
		case m.Placed != nil:
			held = append(held, *m.Placed)
			if j.Held() {
				plan.Actions = append(plan.Actions, Action{Job: j, Kind: Resume, Placement: m.Placed, Comment: j.Comment,
					Reason: "placed by an earlier round that stopped before releasing it", CPUsPerTask: cpusPerTask(j, m.Placed.CPUs)})
			}
		case j.Held() && (m.Profile != "" || cfg.Partition != ""):
			queue = append(queue, queued{j, m})
		}
	}
	return running, queue, held
}

// others is what jobs outside a round hold, per node.
type others struct {
	cluster *scheduler.Cluster
	index   map[string]int
	used    []scheduler.Usage
}

// othersOf is the nodes' allocations and the placed-not-released jobs,
// less the opted-in running jobs' own placements.
func othersOf(c *scheduler.Cluster, nodes []Node, held []Placement, running []queued) others {
	o := others{cluster: c, index: map[string]int{}, used: usedOf(c, nodes, held)}
	for i, s := range c.Servers {
		o.index[s.Name] = i
	}
	for k := range o.used {
		u := &o.used[k]
		for _, m := range running {
			if p := m.mark.Placed; p.Node == u.Server {
				u.GPUs -= p.GPUs
				u.CPUs -= float64(p.CPUs)
				u.MemBytes -= float64(p.MemMiB * MiB)
			}
		}
		u.GPUs, u.CPUs, u.MemBytes = max(u.GPUs, 0), max(u.CPUs, 0), max(u.MemBytes, 0)
	}
	return o
}

// round is a fresh round with what others hold reserved.
func (o others) round() (*scheduler.Round, error) {
	r := scheduler.NewRound(o.cluster)
	for k, u := range o.used {
		if u.GPUs == 0 && u.CPUs == 0 && u.MemBytes == 0 {
			continue
		}
		other := &scheduler.Job{ID: -1 - k, Model: "in use", GPUs: max(u.GPUs, 1)}
		a := scheduler.Allocation{JobID: other.ID, Servers: []scheduler.ServerAlloc{{Server: o.index[u.Server], GPUs: u.GPUs, CPUs: u.CPUs, MemBytes: u.MemBytes}}, Speedup: 1}
		if err := r.Reserve(other, a); err != nil {
			return nil, fmt.Errorf("round: what other jobs hold on %s: %w", u.Server, err)
		}
	}
	return r, nil
}

// stayPut keeps on their nodes the running jobs the round runs at the same
// size (a move costs a checkpoint and a restart) and places the other jobs
// it runs around them, by the same strategy in the same order. It returns
// the new placements and the jobs kept.
func stayPut(c *scheduler.Cluster, o others, s scheduler.Strategy, offer []*scheduler.Active, byJob map[*scheduler.Job]queued,
	placed map[int]*scheduler.Allocation) (map[int]*scheduler.Allocation, map[int]bool, int, error) {
	final, err := o.round()
	if err != nil {
		return nil, nil, 0, err
	}
	keep := map[int]bool{}
	var rest []*scheduler.Active
	for _, a := range offer {
		m := byJob[a.Job]
		al := placed[m.job.ID]
		if al == nil {
			continue
		}
		to, _ := roundPlacement(c, al)
		if cur := m.mark.Placed; m.job.State == "RUNNING" && to != nil && to.GPUs == cur.GPUs && to.CPUs == cur.CPUs && to.MemMiB == cur.MemMiB {
			stay := scheduler.Allocation{JobID: a.Job.ID, Speedup: al.Speedup, Servers: []scheduler.ServerAlloc{{Server: o.index[cur.Node],
				GPUs: cur.GPUs, CPUs: float64(cur.CPUs), MemBytes: float64(cur.MemMiB * MiB)}}}
			if final.Reserve(a.Job, stay) == nil {
				keep[m.job.ID] = true
				continue
			}
		}
		rest = append(rest, a)
	}
	scheduler.SchedulePlaced(final, s, rest)
	at := map[int]*scheduler.Allocation{}
	final.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) { at[byJob[j].job.ID] = a })
	return at, keep, final.FreeGPUs(), nil
}

// decideRound turns one job's round into plan's Keep, Moves or Actions
// (gpus: what it needs; free: GPUs left free by the round).
func decideRound(plan *RoundPlan, m queued, gpus, free int, keep map[int]bool, placed, at map[int]*scheduler.Allocation) {
	if keep[m.job.ID] {
		plan.Keep = append(plan.Keep, m.job)
		return
	}
	to, why := roundPlacement(&plan.Cluster, at[m.job.ID])
	switch {
	case placed[m.job.ID] != nil && to == nil && why == "not placed this round":
		why = "chosen to run, but it does not fit around the jobs that stay on their nodes"
	case to == nil && why == "not placed this round":
		why = fmt.Sprintf("not placed this round; gpu: need %d, free %d after the jobs the policy ranks first", gpus, free)
	}
	switch {
	case m.job.State == "RUNNING" && to != nil && *to == *m.mark.Placed:
		plan.Keep = append(plan.Keep, m.job)
	case m.job.State == "RUNNING" && to != nil:
		plan.Moves = append(plan.Moves, Move{Job: m.job, From: m.mark.Placed, To: to, Why: "moved or resized to " + to.String()})
	case m.job.State == "RUNNING":
		plan.Moves = append(plan.Moves, Move{Job: m.job, From: m.mark.Placed, Why: "paused: " + why})
	case to == nil:
		plan.Actions = append(plan.Actions, wait(m.job, m.mark, why))
	default:
		plan.Actions = append(plan.Actions, placeAction(m.job, m.mark, *to))
	}
}

// roundPlacement is a round's allocation as the bridge pins it (one node,
// whole CPUs, whole MiB), or nil and why not.
func roundPlacement(c *scheduler.Cluster, al *scheduler.Allocation) (*Placement, string) {
	switch {
	case al == nil:
		return nil, "not placed this round"
	case len(al.Servers) != 1:
		return nil, fmt.Sprintf("placed across %d nodes; the bridge pins single-node jobs only", len(al.Servers))
	}
	s := al.Servers[0]
	return &Placement{Node: c.Servers[s.Server].Name, GPUs: s.GPUs, CPUs: max(int(math.Round(s.CPUs)), 1), MemMiB: max(int64(s.MemBytes/MiB), 1)}, ""
}

// placeAction pins held job j at p.
func placeAction(j Job, m Mark, p Placement) Action {
	cpt := cpusPerTask(j, p.CPUs)
	if cpt == 0 {
		return wait(j, m, fmt.Sprintf("placed with %d CPUs, which do not divide among its %d tasks", p.CPUs, j.Tasks))
	}
	m.Placed, m.Waiting = &p, ""
	c := m.String()
	return Action{Job: j, Kind: Place, Placement: &p, Comment: c, Changed: c != j.Comment, Reason: "placed this round", CPUsPerTask: cpt}
}

// preemptAtOnce bounds the preemptions a round runs side by side (each is
// a few Slurm commands and a wait for the job's checkpoint).
const preemptAtOnce = 32

// RoundResult is one round as run: the plan, the preemptions and the
// actions applied.
type RoundResult struct {
	Plan        RoundPlan
	Preemptions []Preemption
	// PreemptErrs holds Preempt's errors, by job.
	PreemptErrs map[int]error
	Applied     []Applied
}

// preemptAll preempts the moves' jobs side by side (each waits for its
// job's checkpoint), at most preemptAtOnce at a time, recording each in
// res, and returns where the round puts those it moves.
func (b *Bridge) preemptAll(ctx context.Context, moves []Move, grace time.Duration, res *RoundResult) map[int]*Placement {
	target := map[int]*Placement{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, preemptAtOnce)
	for _, mv := range moves {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p, err := b.Preempt(ctx, mv.Job.ID, grace, mv.Why)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.PreemptErrs[mv.Job.ID] = err
				return
			}
			res.Preemptions = append(res.Preemptions, p)
			if mv.To != nil {
				target[mv.Job.ID] = mv.To
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(res.Preemptions, func(x, y Preemption) int { return cmp.Compare(x.JobID, y.JobID) })
	return target
}

// RunRound reads the cluster, plans a round (PlanRound) and applies it:
// held jobs left placed are released; running jobs to move, resize or
// pause are preempted (Preempt, each given grace to checkpoint); then the
// held jobs the round placed, the preempted ones among them, are pinned
// and released (their new placement), the others left held with the
// reason. Running jobs whose placement is unchanged are not touched.
func (b *Bridge) RunRound(ctx context.Context, grace time.Duration, now func() time.Time) (*RoundResult, error) {
	snap, err := ReadSnapshot(ctx, b.Cmd)
	if err != nil {
		return nil, err
	}
	plan, err := PlanRound(snap, b.Config, now())
	if err != nil {
		return nil, err
	}
	res := &RoundResult{Plan: plan, PreemptErrs: map[int]error{}}
	target := b.preemptAll(ctx, plan.Moves, grace, res)
	// A placement of this round may need the room a preemption was to free:
	// when one failed, the job it did not stop still holds its node, so no
	// job is placed this round (it would wait pinned behind it); they stay
	// held, saying why, and the next round plans again.
	failed := slices.Sorted(maps.Keys(res.PreemptErrs))
	notNow := func(a Action) Applied {
		return Applied{Action: a, Err: fmt.Errorf("not placed this round: the preemption of job %v failed, so the room it needs may not be free; the next round plans again", failed)}
	}
	for _, a := range plan.Actions {
		if a.Kind == Place && len(failed) > 0 {
			res.Applied = append(res.Applied, notNow(a))
			continue
		}
		res.Applied = append(res.Applied, Applied{Action: a, Err: b.apply(ctx, a)})
	}
	if len(target) == 0 {
		return res, nil
	}
	if len(failed) > 0 {
		for _, id := range slices.Sorted(maps.Keys(target)) {
			res.Applied = append(res.Applied, notNow(Action{Job: Job{ID: id}, Kind: Place, Placement: target[id]}))
		}
		slices.SortFunc(res.Applied, func(x, y Applied) int { return cmp.Compare(x.Job.ID, y.Job.ID) })
		return res, nil
	}
	// The preempted jobs are held now, with new comments: pin them where
	// the round put them.
	for id, p := range target {
		j, err := b.job(ctx, id)
		if err != nil || !j.Held() {
			res.Applied = append(res.Applied, Applied{Action: Action{Job: Job{ID: id}, Kind: Place, Placement: p},
				Err: fmt.Errorf("job %d not held after its preemption (%v): the next round places it", id, err)})
			continue
		}
		m, err := ParseMark(j.Comment)
		if err != nil {
			res.Applied = append(res.Applied, Applied{Action: Action{Job: j, Kind: Place, Placement: p}, Err: err})
			continue
		}
		a := placeAction(j, m, *p)
		res.Applied = append(res.Applied, Applied{Action: a, Err: b.apply(ctx, a)})
	}
	slices.SortFunc(res.Applied, func(x, y Applied) int { return cmp.Compare(x.Job.ID, y.Job.ID) })
	return res, nil
}

// String is a one-line summary of a round.
func (r *RoundResult) String() string {
	placed, waiting := 0, 0
	for _, a := range r.Applied {
		switch a.Kind {
		case Place, Resume:
			if a.Err == nil {
				placed++
			}
		case Wait:
			waiting++
		}
	}
	var moved []string
	lost := 0.0
	for _, p := range r.Preemptions {
		moved = append(moved, strconv.Itoa(p.JobID)+": "+p.How)
		lost += p.LostS
	}
	return fmt.Sprintf("round: %d kept, %d preempted [%s], %d placed, %d waiting, %d errors, %.0f s of work lost by jobs without a checkpoint",
		len(r.Plan.Keep), len(r.Preemptions), strings.Join(moved, "; "), placed, waiting, len(r.PreemptErrs), lost)
}
