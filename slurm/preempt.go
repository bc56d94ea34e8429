package slurm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// PreemptSignal is the signal a preempted job gets: the one PyTorch
// Lightning's Slurm auto-requeue and submitit's jobs checkpoint on, and
// synthtrain and the PyTorch reference jobs (docs/job-contract.md).
const PreemptSignal = "USR1"

// exitPreempted is the wait status of a job that exited 3 (saved its
// checkpoint on the signal, docs/job-contract.md) without requeueing
// itself: squeue reports the status as the shell's wait status.
const exitPreempted = 3 << 8

// sigUSR1 is SIGUSR1's number on Linux: a job killed by it has it in its
// wait status's low bits.
const sigUSR1 = 10

// Preemption is what Preempt did to one job.
type Preemption struct {
	JobID int
	// How says how the job left its node: "requeued and held by itself"
	// (it saved its checkpoint and ran scontrol requeuehold),
	// "requeued by itself, held" (it ran scontrol requeue; the bridge
	// held it), "stopped itself, requeued held" (it exited 3 without a
	// requeue), "requeued held after the grace" (it was still running:
	// Slurm sends it SIGTERM, then SIGKILL after KillWait, and it resumes
	// from whatever checkpoint it has), "ended STATE ..., requeued held"
	// (the signal killed it: a job that does not checkpoint, which starts
	// again from zero) or "finished within the grace".
	How string
	// Waited is how long the job took to leave RUNNING (the grace when
	// it did not).
	Waited time.Duration
	// Saved says whether the job answered as the checkpoint protocol
	// does (requeued itself, or exited 3): its work is kept. Lost is set
	// when the signal killed it (it has no handler, so no checkpoint): it
	// starts again from iteration 0, and LostS, its attained service, is
	// the work lost. Neither: it was still running after the grace and
	// Slurm stops it (it may save on SIGTERM; the bridge cannot tell).
	Saved, Lost bool
	LostS       float64
}

// Preempt takes a running job that opted in (a synergy:profile in its
// comment) off its node through Slurm's own mechanisms, in the order that
// loses no job when the bridge is killed at any step:
//
//  1. its comment's placement becomes "synergy:waiting=preempted: REASON"
//     (a running job's resources are counted from the nodes, not the mark,
//     so nothing is booked twice; a job left so is simply planned again);
//  2. scancel --signal=USR1 --batch: the job saves its checkpoint and
//     requeues itself (held, with SYNERGY_REQUEUE=hold);
//  3. up to grace, the bridge waits for it to leave RUNNING;
//  4. a job still running is requeued held (scontrol requeuehold), one
//     requeued but not held is held, one that ended otherwise than
//     COMPLETED (exit 3 after its checkpoint, or killed by the signal) is
//     requeued held.
//
// The job ends held with no placement: the next pass plans it like any
// held job (on another node, with another size, or not at all).
func (b *Bridge) Preempt(ctx context.Context, id int, grace time.Duration, reason string) (Preemption, error) {
	p := Preemption{JobID: id}
	sid := strconv.Itoa(id)
	j, err := b.job(ctx, id)
	if err != nil {
		return p, err
	}
	if j.State != "RUNNING" {
		return p, fmt.Errorf("preempt job %d: it is %s, not RUNNING", id, j.State)
	}
	if j.StartTime <= 0 {
		return p, fmt.Errorf("preempt job %d: squeue gives no start time", id)
	}
	m, err := ParseMark(j.Comment)
	if err != nil {
		return p, fmt.Errorf("preempt job %d: %w", id, err)
	}
	if m.Profile == "" {
		return p, fmt.Errorf("preempt job %d: it did not opt in (no %sPATH in its comment)", id, markProfile)
	}
	bookService(&m, j, time.Now())
	service := m.Service
	m.Placed, m.Waiting = nil, "preempted: "+reason
	if _, err := b.Cmd.Run(ctx, "scontrol", "update", "JobId="+sid, "Comment="+m.String()); err != nil {
		return p, fmt.Errorf("preempt job %d: mark it: %w", id, err)
	}
	// From here on the job is stopped whatever ctx says: a job signalled
	// and then forgotten would requeue itself unplanned.
	ctx = context.WithoutCancel(ctx)
	if _, err := b.Cmd.Run(ctx, "scancel", "--signal="+PreemptSignal, "--batch", sid); err != nil {
		return p, fmt.Errorf("preempt job %d: signal it: %w", id, err)
	}
	start := time.Now()
	poll := b.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		j, err = b.job(ctx, id)
		if err != nil {
			return p, err
		}
		if j.State != "RUNNING" && j.State != "COMPLETING" {
			break
		}
		if time.Since(start) >= grace {
			break
		}
		time.Sleep(min(poll, grace-time.Since(start)))
	}
	p.Waited = time.Since(start)
	verb := ""
	switch {
	case j.State == "RUNNING" || j.State == "COMPLETING":
		p.How, verb = "requeued held after the grace", "requeuehold"
	case j.State == "PENDING" && j.Held():
		p.How, p.Saved = "requeued and held by itself", true
	case j.State == "PENDING":
		p.How, verb, p.Saved = "requeued by itself, held", "hold", true
	case j.State == "COMPLETED":
		p.How = "finished within the grace"
	case j.ExitCode == exitPreempted:
		p.How, verb, p.Saved = "stopped itself, requeued held", "requeuehold", true
	case j.ExitCode&0x7f == sigUSR1:
		p.How, verb = "killed by the signal (no checkpoint: it starts again from zero), requeued held", "requeuehold"
		p.Lost, p.LostS = true, service
	default:
		// Failed otherwise: requeued to start again, from zero unless it
		// has a checkpoint.
		p.How, verb = fmt.Sprintf("ended %s (wait status %d) within the grace, requeued held", j.State, j.ExitCode), "requeuehold"
	}
	if verb != "" {
		if _, err := b.Cmd.Run(ctx, "scontrol", verb, sid); err != nil {
			return p, fmt.Errorf("preempt job %d: %s: %w", id, verb, err)
		}
	}
	waitPastKillSecond()
	return p, nil
}

// waitPastKillSecond returns once the current second has passed. slurmd
// revoked a preempted job's credential when its run was killed, and
// refuses a launch whose credential was made in that same second ("Job N
// already killed, do not launch batch job": the job ends FAILED, seen in
// CI); released after this, its next credential is a second later.
func waitPastKillSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
}

// bookService adds a running job's current run to its mark's service, once
// (a run already booked, by its start time, is not booked again).
func bookService(m *Mark, j Job, now time.Time) {
	if j.State != "RUNNING" || j.StartTime <= 0 || j.StartTime == m.ServiceStart {
		return
	}
	m.Service += max(0, float64(now.Unix()-j.StartTime))
	m.ServiceStart = j.StartTime
}

// Attained is a job's attained service at now: the runs its mark has
// booked, and its current run when that is not booked yet.
func Attained(m Mark, j Job, now time.Time) float64 {
	s := m.Service
	if j.State == "RUNNING" && j.StartTime > 0 && j.StartTime != m.ServiceStart {
		s += max(0, float64(now.Unix()-j.StartTime))
	}
	return s
}

// job reads one job, whatever its state.
func (b *Bridge) job(ctx context.Context, id int) (Job, error) {
	out, err := b.Cmd.Run(ctx, "squeue", "--json", "--states=all", "--jobs="+strconv.Itoa(id))
	if err != nil {
		return Job{}, wrapRead("read job "+strconv.Itoa(id)+" (squeue --json)", err)
	}
	jobs, err := ParseJobs(out)
	if err != nil {
		return Job{}, err
	}
	for _, j := range jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return Job{}, errors.New("job " + strconv.Itoa(id) + ": not in squeue (ended and purged, or never there)")
}
