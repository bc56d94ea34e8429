package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

// buildSynthtrain builds cmd/synthtrain for the jobs to run.
func buildSynthtrain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "synthtrain")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/synergy-sched/synergy/cmd/synthtrain")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build synthtrain: %v\n%s", err, out)
	}
	return bin
}

// lines reads a metrics stream's iteration numbers.
func iterations(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var it struct{ Iter int }
		if err := json.Unmarshal(l, &it); err != nil {
			t.Fatalf("metrics line %q: %v", l, err)
		}
		out = append(out, it.Iter)
	}
	return out
}

// waitJob polls job id until ok, failing after limit.
func waitJob(t *testing.T, b *Bridge, id int, limit time.Duration, what string, ok func(Job) bool) Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j, err := b.job(context.Background(), id)
		if err == nil && ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for job %d to be %s (last: %+v, %v)", limit, id, what, j, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// A checkpointing job (synthtrain, SYNERGY_REQUEUE=hold) placed by a pass
// and preempted mid-run by the bridge saves its checkpoint on the signal,
// requeues itself held, is placed again by the next pass and resumes
// there: its metrics stream holds every iteration once, and Slurm counts
// one restart.
func TestReal_PreemptedJobResumesWhereItStopped(t *testing.T) {
	x, _ := realSlurm(t)
	bin := buildSynthtrain(t)
	dir := t.TempDir()
	metrics, ck := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "ck")
	script := filepath.Join(dir, "job.sh")
	t.Cleanup(func() { logJobOutput(t, dir) })
	const iters = 300
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+bin+" --synthetic-data --preset language --gpu-step 20ms --max-iterations 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id, _, err := Submit(context.Background(), x, SubmitRequest{Profile: examplePath(t, "language"), Hold: true,
		Sbatch: []string{"--job-name=" + testJobPrefix + "preempt", "--output=" + filepath.Join(dir, "out-%j.log"),
			"--export=ALL,SYNERGY_REQUEUE=hold,SYNERGY_METRICS_FILE=" + metrics + ",SYNERGY_CHECKPOINT_DIR=" + ck, script}})
	if err != nil {
		t.Fatal(err)
	}
	b := &Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}}, Poll: 100 * time.Millisecond}
	if _, err := b.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(iterations(t, metrics)) < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("job %d wrote %d lines in 60 s", id, len(iterations(t, metrics)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := b.Preempt(context.Background(), id, 20*time.Second, "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.How != "requeued and held by itself" {
		t.Errorf("preempted: %+v, want the job to requeue itself held", p)
	}
	j := waitJob(t, b, id, 30*time.Second, "held", func(j Job) bool { return j.Held() })
	if !strings.Contains(j.Comment, "synergy:waiting=preempted: test") || strings.Contains(j.Comment, markPlaced) {
		t.Errorf("comment after the preemption: %q", j.Comment)
	}
	stopped := iterations(t, metrics)
	if n := len(stopped); n >= iters || stopped[n-1] != n-1 {
		t.Fatalf("after the preemption the stream holds %d lines ending at %d", n, stopped[n-1])
	}
	res, err := b.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := placements(t, res); got[id].Node == "" {
		t.Fatalf("the preempted job was not placed again: %+v", res.Pass.Actions)
	}
	j = waitJob(t, b, id, 120*time.Second, "COMPLETED", func(j Job) bool { return j.State == "COMPLETED" || j.State == "FAILED" })
	all := iterations(t, metrics)
	for i, it := range all {
		if it != i {
			t.Fatalf("stream: line %d is iteration %d (stopped after %d): an iteration lost or repeated", i, it, len(stopped))
		}
	}
	if len(all) != iters || j.State != "COMPLETED" || j.Restarts != 1 {
		t.Errorf("job ended %s with %d restarts and %d iterations; want COMPLETED, 1, %d", j.State, j.Restarts, len(all), iters)
	}
	t.Logf("preempted after %d iterations in %v; resumed and finished", len(stopped), p.Waited)

	// Slurm's own completion log has both runs.
	out, err := x.Run(context.Background(), "scontrol", "show", "config")
	if err != nil {
		t.Fatal(err)
	}
	var loc string
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "JobCompLoc" {
			loc = strings.TrimSpace(v)
		}
	}
	f, err := os.Open(loc)
	if err != nil {
		t.Fatalf("the completion log (JobCompLoc %q): %v", loc, err)
	}
	defer f.Close()
	runs, err := ParseJobComp(f, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range JoinRuns(runs) {
		if r.JobID == id && (r.Runs != 2 || r.Preemptions != 1 || r.State != "COMPLETED" || !(r.JCTS > 0)) {
			t.Errorf("the completion log's record of job %d: %+v; want 2 runs, 1 preemption, COMPLETED", id, r)
		}
	}
}

// A job that ignores the signal is requeued held by the bridge once its
// grace is over (Slurm then stops it).
func TestReal_PreemptIgnoredSignalRequeuesAfterGrace(t *testing.T) {
	x, _ := realSlurm(t)
	id, _, err := Submit(context.Background(), x, SubmitRequest{Profile: examplePath(t, "image"), Hold: true,
		Sbatch: []string{"--job-name=" + testJobPrefix + "deaf", "--output=/dev/null", "--wrap", "trap '' USR1; sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	b := &Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}}, Poll: 100 * time.Millisecond}
	if _, err := b.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitJob(t, b, id, 30*time.Second, "RUNNING", func(j Job) bool { return j.State == "RUNNING" })
	p, err := b.Preempt(context.Background(), id, 2*time.Second, "deaf")
	if err != nil {
		t.Fatal(err)
	}
	if p.How != "requeued held after the grace" || p.Waited < 2*time.Second {
		t.Errorf("preempted: %+v, want a requeue by the bridge after the 2 s grace", p)
	}
	j := waitJob(t, b, id, 60*time.Second, "held", func(j Job) bool { return j.Held() })
	if j.Restarts != 1 {
		t.Errorf("restarts %d, want 1", j.Restarts)
	}
	if _, err := b.Preempt(context.Background(), id, time.Second, "again"); err == nil || !strings.Contains(err.Error(), "not RUNNING") {
		t.Errorf("preempting a held job: %v, want a refusal", err)
	}
}

// logJobOutput shows the Slurm job outputs (out-*.log) in dir when the test
// failed: what the job said is why.
func logJobOutput(t *testing.T, dir string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "out-*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", filepath.Base(l), b)
	}
}
