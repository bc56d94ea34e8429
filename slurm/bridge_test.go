package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// fakeSlurm answers squeue/sinfo from its state and records every other
// command; failOn makes the first command starting with that prefix fail.
type fakeSlurm struct {
	nodes  []Node
	jobs   []Job
	calls  [][]string
	failOn string
}

var _ Commander = (*fakeSlurm)(nil)

func (f *fakeSlurm) Run(_ context.Context, argv ...string) ([]byte, error) {
	line := strings.Join(argv, " ")
	if f.failOn != "" && strings.HasPrefix(line, f.failOn) {
		f.failOn = ""
		return nil, &CommandError{Argv: argv, Err: errors.New("exit status 1"), Stderr: "injected failure"}
	}
	switch argv[0] {
	case "squeue":
		return f.squeue(), nil
	case "sinfo":
		return f.sinfo(), nil
	}
	f.calls = append(f.calls, argv)
	if len(argv) > 3 && argv[1] == "update" {
		for i := range f.jobs {
			if "JobId="+itoa(f.jobs[i].ID) == argv[2] {
				for _, kv := range argv[3:] {
					if c, ok := strings.CutPrefix(kv, "Comment="); ok {
						f.jobs[i].Comment = c
					}
				}
			}
		}
	}
	if len(argv) == 3 && argv[1] == "release" {
		for i := range f.jobs {
			if itoa(f.jobs[i].ID) == argv[2] {
				f.jobs[i].Reason = "None"
			}
		}
	}
	return nil, nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (f *fakeSlurm) squeue() []byte {
	var jobs []map[string]any
	for _, j := range f.jobs {
		jobs = append(jobs, map[string]any{"job_id": j.ID, "name": j.Name, "partition": j.Partition, "job_state": j.State,
			"state_reason": j.Reason, "comment": j.Comment, "tasks": j.Tasks, "cpus": j.CPUs, "cpus_per_task": nil,
			"node_count": 1, "tres_per_node": "gres:gpu:" + itoa(j.GPUsPerNode), "tres_per_job": "", "submit_time": j.SubmitTime})
	}
	b, _ := json.Marshal(map[string]any{"errors": []any{}, "jobs": jobs})
	return b
}

func (f *fakeSlurm) sinfo() []byte {
	var nodes []map[string]any
	for _, n := range f.nodes {
		nodes = append(nodes, map[string]any{"name": n.Name, "partitions": n.Partitions, "state": n.State, "state_flags": []string{},
			"cpus": n.CPUs, "real_memory": n.MemMiB, "gres": "gpu:" + itoa(n.GPUs), "gres_used": "gpu:" + itoa(n.AllocGPUs),
			"alloc_cpus": n.AllocCPUs, "alloc_memory": n.AllocMemMiB})
	}
	b, _ := json.Marshal(map[string]any{"errors": []any{}, "nodes": nodes})
	return b
}

func (f *fakeSlurm) commands() []string {
	var out []string
	for _, c := range f.calls {
		out = append(out, c[1]+" "+c[2])
	}
	return out
}

func TestBridge_PlaceIsOneUpdateThenRelease(t *testing.T) {
	f := &fakeSlurm{nodes: localNodes(), jobs: []Job{heldJob(7, examples+"image.json", 1)}}
	b := &Bridge{Cmd: f, Config: Config{Strategy: scheduler.Tune{}}}
	res, err := b.RunPass(context.Background())
	if err != nil || res.Errors() != 0 {
		t.Fatal(err, res.Applied)
	}
	if got := strings.Join(f.commands(), ", "); got != "update JobId=7, release 7" {
		t.Fatalf("commands %q", got)
	}
	want := []string{"scontrol", "update", "JobId=7", "NodeList=node1", "NumNodes=1", "NumCPUs=6", "CPUsPerTask=6", "MinMemoryNode=32768", "Gres=gpu:1", "StartTime=now",
		"Comment=synergy:profile=" + examples + "image.json synergy:placed=node1/gpus=1/cpus=6/mem_mib=32768"}
	if got := f.calls[0]; strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("update argv\n got %q\nwant %q", got, want)
	}
}

// The bridge stops between update and release (the release fails): the
// next pass releases the job without placing it again and keeps its node's
// GPUs from the next job.
func TestBridge_RestartBetweenUpdateAndRelease(t *testing.T) {
	f := &fakeSlurm{nodes: localNodes()[:1], jobs: []Job{heldJob(1, examples+"language.json", 8)}, failOn: "scontrol release 1"}
	b := &Bridge{Cmd: f, Config: Config{Strategy: scheduler.Tune{}}}
	res, err := b.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors() != 1 || !f.jobs[0].Held() || !strings.Contains(f.jobs[0].Comment, markPlaced) {
		t.Fatalf("first pass: %d errors, job %+v", res.Errors(), f.jobs[0])
	}
	f.jobs = append(f.jobs, heldJob(2, examples+"language.json", 1))
	f.calls = nil
	b2 := &Bridge{Cmd: f, Config: Config{Strategy: scheduler.Tune{}}}
	res, err = b2.RunPass(context.Background())
	if err != nil || res.Errors() != 0 {
		t.Fatal(err, res.Applied)
	}
	if got := strings.Join(f.commands(), ", "); got != "release 1, update JobId=2" {
		t.Errorf("second pass commands %q, want job 1 released and job 2 told why it waits", got)
	}
	if !strings.Contains(f.jobs[1].Comment, markWaiting) || !strings.Contains(f.jobs[1].Comment, "gpu") {
		t.Errorf("job 2 comment %q", f.jobs[1].Comment)
	}
}

// A refused update leaves the job held with the refusal in its comment.
func TestBridge_RefusedUpdateIsExplained(t *testing.T) {
	f := &fakeSlurm{nodes: localNodes(), jobs: []Job{heldJob(3, examples+"audio.json", 1)}, failOn: "scontrol update JobId=3 NodeList"}
	b := &Bridge{Cmd: f, Config: Config{Strategy: scheduler.Tune{}}}
	res, err := b.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors() != 1 || !f.jobs[0].Held() || !strings.Contains(f.jobs[0].Comment, "refused") || !strings.Contains(f.jobs[0].Comment, "injected failure") {
		t.Errorf("%d errors; job %+v", res.Errors(), f.jobs[0])
	}
}

func TestBridge_UnreachableChangesNothing(t *testing.T) {
	f := &fakeSlurm{nodes: localNodes(), jobs: []Job{heldJob(3, examples+"audio.json", 1)}, failOn: "squeue"}
	b := &Bridge{Cmd: &unreachableCmd{f}, Config: Config{Strategy: scheduler.Tune{}}}
	_, err := b.RunPass(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "squeue --json") {
		t.Fatalf("err = %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("commands run: %v", f.calls)
	}
}

type unreachableCmd struct{ *fakeSlurm }

func (u *unreachableCmd) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if argv[0] == "squeue" || argv[0] == "sinfo" {
		return nil, &CommandError{Argv: argv, Err: errors.New("exit status 1"), Stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"}
	}
	return u.fakeSlurm.Run(ctx, argv...)
}
