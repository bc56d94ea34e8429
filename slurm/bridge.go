package slurm

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Bridge runs passes against a Slurm cluster.
type Bridge struct {
	Cmd    Commander
	Config Config
	// Poll is how often Preempt looks at a signalled job (0: 500 ms).
	Poll time.Duration
}

// Applied is one action and what became of it.
type Applied struct {
	Action
	// Err is the scontrol error, if any (the job is then left held with
	// the error in its comment where scontrol still answers).
	Err error
}

// Result is one pass: what it saw and decided, and what was done.
type Result struct {
	Pass    Pass
	Applied []Applied
}

// Errors counts the actions that failed.
func (r *Result) Errors() int {
	n := 0
	for _, a := range r.Applied {
		if a.Err != nil {
			n++
		}
	}
	return n
}

// RunPass reads the cluster and the queue, plans and applies: jobs left
// placed by an earlier pass are released, placed jobs pinned and released,
// waiting jobs' comments updated where the reason changed. A failed read
// changes nothing and is returned; a failed action is reported in its
// Applied and the others go on. Once a job's update is sent its release
// is sent even if ctx is cancelled, so an interrupt does not leave it
// placed but held (a later pass would release it anyway).
func (b *Bridge) RunPass(ctx context.Context) (*Result, error) {
	snap, err := ReadSnapshot(ctx, b.Cmd)
	if err != nil {
		return nil, err
	}
	pass, err := PlanPass(snap, b.Config)
	if err != nil {
		return nil, err
	}
	res := &Result{Pass: pass}
	for _, a := range pass.Actions {
		res.Applied = append(res.Applied, Applied{Action: a, Err: b.apply(ctx, a)})
	}
	return res, nil
}

func (b *Bridge) apply(ctx context.Context, a Action) error {
	id := strconv.Itoa(a.Job.ID)
	switch a.Kind {
	case Resume:
		return b.release(context.WithoutCancel(ctx), id)
	case Place:
		if _, err := b.Cmd.Run(ctx, UpdateArgv(a)...); err != nil {
			b.noteFailure(ctx, a, err)
			return fmt.Errorf("pin job %s to %s: %w", id, a.Placement.Node, err)
		}
		return b.release(context.WithoutCancel(ctx), id)
	case Wait:
		if !a.Changed {
			return nil
		}
		if _, err := b.Cmd.Run(ctx, "scontrol", "update", "JobId="+id, "Comment="+a.Comment); err != nil {
			return fmt.Errorf("write job %s's reason: %w", id, err)
		}
	}
	return nil
}

func (b *Bridge) release(ctx context.Context, id string) error {
	if _, err := b.Cmd.Run(ctx, "scontrol", "release", id); err != nil {
		return fmt.Errorf("release job %s: %w", id, err)
	}
	return nil
}

// noteFailure writes a failed pin into the job's comment (best effort:
// the job stays held, and says why).
func (b *Bridge) noteFailure(ctx context.Context, a Action, cause error) {
	m, err := ParseMark(a.Job.Comment)
	if err != nil {
		return
	}
	m.Placed, m.Waiting = nil, "scontrol update refused the placement on "+a.Placement.Node+": "+cause.Error()
	_, _ = b.Cmd.Run(context.WithoutCancel(ctx), "scontrol", "update", "JobId="+strconv.Itoa(a.Job.ID), "Comment="+m.String())
}

// UpdateArgv is the scontrol update that pins a placed job: its node, one
// node, its CPUs (and CPUs per task), memory per node, GPUs per node, the
// comment recording the placement, and StartTime=now (Slurm makes a
// requeued job, e.g. a preempted one, eligible only ~120 s later; now
// lifts that), in one request.
func UpdateArgv(a Action) []string {
	p := a.Placement
	return []string{"scontrol", "update", "JobId=" + strconv.Itoa(a.Job.ID),
		"NodeList=" + p.Node, "NumNodes=1",
		"NumCPUs=" + strconv.Itoa(p.CPUs), "CPUsPerTask=" + strconv.Itoa(a.CPUsPerTask),
		"MinMemoryNode=" + strconv.FormatInt(p.MemMiB, 10),
		"Gres=gpu:" + strconv.Itoa(p.GPUs), "StartTime=now",
		"Comment=" + a.Comment}
}
