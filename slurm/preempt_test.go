package slurm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// scripted is a Slurm whose one job answers a signal as told: state and
// exit status after scancel, and a requeuehold that holds it.
type scripted struct {
	job   Job
	after func(j *Job)
	calls []string
}

func (s *scripted) Run(_ context.Context, argv ...string) ([]byte, error) {
	line := strings.Join(argv, " ")
	switch argv[0] {
	case "squeue":
		j := s.job
		b, _ := json.Marshal(map[string]any{"errors": []any{}, "jobs": []map[string]any{{"job_id": j.ID, "job_state": j.State,
			"state_reason": j.Reason, "comment": j.Comment, "tasks": 1, "cpus": 8, "node_count": 1, "tres_per_node": "gres:gpu:8",
			"tres_per_job": "", "submit_time": 1, "start_time": j.StartTime, "exit_code": j.ExitCode, "restart_cnt": j.Restarts}}})
		return b, nil
	case "scancel":
		s.after(&s.job)
	case "scontrol":
		if c, ok := strings.CutPrefix(argv[len(argv)-1], "Comment="); ok {
			s.job.Comment = c
		}
		if argv[1] == "requeuehold" || argv[1] == "hold" {
			s.job.State, s.job.Reason = "PENDING", "JobHeldAdmin"
		}
	}
	s.calls = append(s.calls, line)
	return nil, nil
}

func TestPreempt_HowTheJobAnswersDecidesWhatIsLost(t *testing.T) {
	start := time.Now().Add(-100 * time.Second).Unix()
	for _, tc := range []struct {
		name        string
		after       func(j *Job)
		how, last   string
		saved, lost bool
	}{
		{"requeues itself held", func(j *Job) { j.State, j.Reason = "PENDING", "JobHeldUser" },
			"requeued and held by itself", "scancel --signal=USR1 --batch 7", true, false},
		{"requeues itself", func(j *Job) { j.State, j.Reason = "PENDING", "BeginTime" },
			"requeued by itself, held", "scontrol hold 7", true, false},
		{"exits 3", func(j *Job) { j.State, j.ExitCode = "FAILED", 3<<8 },
			"stopped itself, requeued held", "scontrol requeuehold 7", true, false},
		{"killed by the signal", func(j *Job) { j.State, j.ExitCode = "FAILED", 10 },
			"killed by the signal (no checkpoint: it starts again from zero), requeued held", "scontrol requeuehold 7", false, true},
		{"ignores it", func(j *Job) {},
			"requeued held after the grace", "scontrol requeuehold 7", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{after: tc.after, job: Job{ID: 7, State: "RUNNING", StartTime: start,
				Comment: Mark{Profile: "/p.json", Placed: &Placement{Node: "node1", GPUs: 8, CPUs: 8, MemMiB: 1024}}.String()}}
			b := &Bridge{Cmd: s, Poll: 10 * time.Millisecond}
			p, err := b.Preempt(context.Background(), 7, 50*time.Millisecond, "test")
			if err != nil {
				t.Fatal(err)
			}
			if p.How != tc.how || p.Saved != tc.saved || p.Lost != tc.lost {
				t.Errorf("preempted %+v; want %q saved=%v lost=%v", p, tc.how, tc.saved, tc.lost)
			}
			if tc.lost && (p.LostS < 99 || p.LostS > 200) {
				t.Errorf("lost %v s; want the run's ~100 s", p.LostS)
			}
			if got := s.calls[len(s.calls)-1]; got != tc.last {
				t.Errorf("last command %q, want %q (all: %q)", got, tc.last, s.calls)
			}
			if !strings.HasPrefix(s.calls[0], "scontrol update JobId=7 Comment=synergy:profile=/p.json synergy:service=") ||
				!strings.Contains(s.calls[0], "synergy:waiting=preempted: test") {
				t.Errorf("first command %q: want the mark, with the run booked, before the signal", s.calls[0])
			}
		})
	}
	s := &scripted{job: Job{ID: 7, State: "RUNNING", StartTime: start, Comment: "no profile"}}
	if _, err := (&Bridge{Cmd: s}).Preempt(context.Background(), 7, time.Second, "x"); err == nil || len(s.calls) != 0 {
		t.Errorf("a job that did not opt in: %v, commands %q; want a refusal and nothing sent", err, s.calls)
	}
}
