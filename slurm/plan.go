package slurm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Config is what a pass needs beyond the snapshot.
type Config struct {
	// Partition limits the nodes and jobs to one partition ("" = all).
	// With a partition, every held job in it opts in, profile or not (a
	// job without one is told so in its comment); without, a held job
	// opts in by naming its profile in its comment.
	Partition string
	// ClusterName names the cluster in the plan and in messages.
	ClusterName string
	Strategy    scheduler.Strategy
	// Policy orders the queue; nil is FIFO (by submission).
	Policy scheduler.Policy
	// LoadProfile reads a job's profile; nil is sensitivity.LoadFilled
	// (what `synergy schedule` reads).
	LoadProfile func(path string) (*sensitivity.Profile, error)
}

// Kind is what a pass does with a job.
type Kind string

const (
	// Place pins the job's node and resources and releases it.
	Place Kind = "place"
	// Resume releases a job placed by an earlier pass that stopped
	// before its release.
	Resume Kind = "resume"
	// Wait leaves the job held with the reason in its comment.
	Wait Kind = "wait"
)

// Action is what a pass decided for one job.
type Action struct {
	Job  Job
	Kind Kind
	// Placement is the node and resources (Place, Resume).
	Placement *Placement
	// Comment is the job's new comment; Changed says it differs from the
	// current one.
	Comment string
	Changed bool
	// Reason says why the job waits, or how it was placed.
	Reason string
	// Outcome is the scheduler's answer for the job, when it was offered.
	Outcome *scheduler.JobOutcome
	// CPUsPerTask is what Place sets along with the CPUs (CPUs / tasks).
	CPUsPerTask int
}

// Pass is one pass's view and decisions.
type Pass struct {
	Cluster scheduler.Cluster
	// Excluded names the nodes left out and why.
	Excluded []string
	// Used is what running jobs, and jobs placed but not yet running,
	// hold per node.
	Used []scheduler.Usage
	// Plan is scheduler.PlaceQueue's answer (nil when nothing was
	// offered); job IDs in it index Offered.
	Plan    *scheduler.QueuePlan
	Offered []Job
	Actions []Action
}

// queued is a held job that opted in, with its mark.
type queued struct {
	job  Job
	mark Mark
}

// PlanPass decides one pass over snap: the GPU nodes (of cfg.Partition)
// become the cluster; what running jobs hold, and what jobs placed by an
// earlier pass will hold, its used resources; the held jobs that opted in,
// in submission order, the queue given to scheduler.PlaceQueue with
// cfg.Strategy and cfg.Policy, each job made from its profile as
// `synergy schedule` makes it (scheduler.JobFromProfile on the cluster's
// shape; the GPUs the job asks for with --gres). A job placed on one node
// gets that node, its GPUs, CPUs (rounded to whole CPUs) and memory (in
// whole MiB, rounded down); every other job waits with a reason.
func PlanPass(snap Snapshot, cfg Config) (Pass, error) {
	var pass Pass
	pass.Cluster, pass.Excluded = clusterOf(cfg, snap.Nodes)
	jobs := slices.Clone(snap.Jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Or(cmp.Compare(a.SubmitTime, b.SubmitTime), cmp.Compare(a.ID, b.ID)) })

	var queue []queued
	var placed []Placement
	for _, j := range jobs {
		if j.State != "PENDING" || (cfg.Partition != "" && j.Partition != cfg.Partition) {
			continue
		}
		m, err := ParseMark(j.Comment)
		switch {
		case err != nil && j.Held() && (m.Profile != "" || cfg.Partition != ""):
			pass.Actions = append(pass.Actions, wait(j, m, "cannot read the comment: "+err.Error()))
		case err != nil:
			continue
		case m.Placed != nil:
			placed = append(placed, *m.Placed)
			if j.Held() {
				pass.Actions = append(pass.Actions, Action{Job: j, Kind: Resume, Placement: m.Placed, Comment: j.Comment,
					Reason: "placed by an earlier pass that stopped before releasing it", CPUsPerTask: cpusPerTask(j, m.Placed.CPUs)})
			}
		case j.Held() && (m.Profile != "" || cfg.Partition != ""):
			queue = append(queue, queued{j, m})
		}
	}
	pass.Used = usedOf(&pass.Cluster, snap.Nodes, placed)
	if len(queue) == 0 {
		return pass, nil
	}
	if len(pass.Cluster.Servers) == 0 {
		why := "no node with GPUs to place on"
		if cfg.Partition != "" {
			why += " in partition " + cfg.Partition
		}
		if len(pass.Excluded) > 0 {
			why += " (" + strings.Join(pass.Excluded, "; ") + ")"
		}
		for _, q := range queue {
			pass.Actions = append(pass.Actions, wait(q.job, q.mark, why))
		}
		return pass, nil
	}
	return placeQueue(pass, queue, cfg)
}

// placeQueue makes a job of each queued entry, runs PlaceQueue and turns
// its outcomes into actions.
func placeQueue(pass Pass, queue []queued, cfg Config) (Pass, error) {
	shape := scheduler.ShapeOf(&pass.Cluster)
	load := cfg.LoadProfile
	if load == nil {
		load = sensitivity.LoadFilled
	}
	var sjobs []*scheduler.Job
	var marks []Mark
	for _, q := range queue {
		j, why := schedJob(len(sjobs), q, shape, load)
		if why != "" {
			pass.Actions = append(pass.Actions, wait(q.job, q.mark, why))
			continue
		}
		sjobs = append(sjobs, j)
		pass.Offered = append(pass.Offered, q.job)
		marks = append(marks, q.mark)
	}
	if len(sjobs) == 0 {
		return pass, nil
	}
	plan, err := scheduler.PlaceQueue(scheduler.Queue{Cluster: &pass.Cluster, InUse: pass.Used, Jobs: sjobs, Strategy: cfg.Strategy, Policy: cfg.Policy})
	if err != nil {
		return pass, fmt.Errorf("place %d jobs on %d nodes: %w", len(sjobs), len(pass.Cluster.Servers), err)
	}
	pass.Plan = plan
	for k := range plan.Jobs {
		o := &plan.Jobs[k]
		if o.JobID < 0 || o.JobID >= len(pass.Offered) {
			return pass, fmt.Errorf("placement plan names job %d; %d were offered", o.JobID, len(pass.Offered))
		}
		pass.Actions = append(pass.Actions, decide(pass.Offered[o.JobID], marks[o.JobID], o))
	}
	return pass, nil
}

// schedJob makes the scheduler's job for q, or says why it cannot.
func schedJob(id int, q queued, shape scheduler.Shape, load func(string) (*sensitivity.Profile, error)) (*scheduler.Job, string) {
	if q.mark.Profile == "" {
		return nil, "no profile: submit with `synergy slurm submit --profile P.json`, or put " + markProfile + "PATH in the job's comment"
	}
	if q.job.GPUsPerJob > 0 {
		return nil, fmt.Sprintf("asks for %d GPUs per job (--gpus); the bridge pins GPUs per node: submit with --gres=gpu:N", q.job.GPUsPerJob)
	}
	p, err := load(q.mark.Profile)
	if err != nil {
		return nil, "profile: " + err.Error()
	}
	j, err := scheduler.JobFromProfile(id, p, shape)
	if err != nil {
		return nil, "profile " + q.mark.Profile + ": " + err.Error()
	}
	if q.job.GPUsPerNode > 0 {
		// The matrix is per GPU: the GPUs asked scale the demand, as
		// `synergy schedule PATH:gpus=N` does. Jobs are placed on one
		// node (squeue's node_count of a pending job is an estimate).
		j.GPUs = q.job.GPUsPerNode
	}
	if err := j.Validate(); err != nil {
		return nil, "profile " + q.mark.Profile + ": " + err.Error()
	}
	return j, ""
}

// decide turns one outcome into an action.
func decide(j Job, m Mark, o *scheduler.JobOutcome) Action {
	if !o.Placed {
		a := wait(j, m, o.Reason)
		a.Outcome = o
		return a
	}
	if len(o.Servers) != 1 {
		var where []string
		for _, s := range o.Servers {
			where = append(where, fmt.Sprintf("%s×%d", s.Server, s.GPUs))
		}
		a := wait(j, m, fmt.Sprintf("placed across %d nodes (%s); the bridge pins single-node jobs only: ask for at most one node's GPUs",
			len(o.Servers), strings.Join(where, " ")))
		a.Outcome = o
		return a
	}
	s := o.Servers[0]
	p := Placement{Node: s.Server, GPUs: s.GPUs, CPUs: max(int(math.Round(s.CPUs)), 1), MemMiB: max(int64(s.MemBytes/MiB), 1)}
	cpt := cpusPerTask(j, p.CPUs)
	if cpt == 0 {
		a := wait(j, m, fmt.Sprintf("placed with %d CPUs, which do not divide among its %d tasks", p.CPUs, j.Tasks))
		a.Outcome = o
		return a
	}
	m.Placed, m.Waiting = &p, ""
	c := m.String()
	return Action{Job: j, Kind: Place, Placement: &p, Comment: c, Changed: c != j.Comment, Reason: o.Reason, Outcome: o, CPUsPerTask: cpt}
}

// cpusPerTask divides cpus among the job's tasks (0 when they do not
// divide).
func cpusPerTask(j Job, cpus int) int {
	t := max(j.Tasks, 1)
	if cpus%t != 0 {
		return 0
	}
	return cpus / t
}

// wait leaves j held with why in its comment.
func wait(j Job, m Mark, why string) Action {
	m.Placed, m.Waiting = nil, why
	c := m.String()
	return Action{Job: j, Kind: Wait, Comment: c, Changed: c != j.Comment, Reason: why}
}
