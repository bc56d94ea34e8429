package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

// submitTrainer submits a held, checkpointing synthtrain job of gpus GPUs
// that runs until stopped; it returns the job id and its metrics file.
func submitTrainer(t *testing.T, x Exec, bin, dir, name string, gpus int) (int, string) {
	t.Helper()
	metrics := filepath.Join(dir, name+".jsonl")
	script := filepath.Join(dir, name+".sh")
	body := "#!/bin/sh\necho \"$SLURM_JOB_ID gpus=$CUDA_VISIBLE_DEVICES node=$SLURMD_NODENAME\" >>" + filepath.Join(dir, "gpus.log") +
		"\nexec " + bin + " --synthetic-data --preset language --gpu-step 20ms --max-iterations 1000000\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	id, _, err := Submit(context.Background(), x, SubmitRequest{Profile: examplePath(t, "language"), GPUs: gpus, Hold: true,
		Sbatch: []string{"--job-name=" + testJobPrefix + name, "--output=" + filepath.Join(dir, name+"-%j.log"),
			"--export=ALL,SYNERGY_REQUEUE=hold,SYNERGY_METRICS_FILE=" + metrics + ",SYNERGY_CHECKPOINT_DIR=" + filepath.Join(dir, name+".ck"), script}})
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return id, metrics
}

// Rounds on a full cluster: four 8-GPU jobs fill the four nodes and keep
// running under FIFO when a fifth arrives (its placement is unchanged, so
// a round does not touch them); under LAS the fifth, with no attained
// service, takes the place of the job LAS ranks last, which is preempted
// through the checkpoint protocol (it requeues itself held), and the
// fifth runs on its node.
func TestReal_RoundsPreemptUnderLASNotFIFO(t *testing.T) {
	x, _ := realSlurm(t)
	bin := buildSynthtrain(t)
	dir := t.TempDir()
	var ids []int
	metrics := map[int]string{}
	for k := range 4 {
		id, m := submitTrainer(t, x, bin, dir, "r"+strconv.Itoa(k), 8)
		ids = append(ids, id)
		metrics[id] = m
	}
	fifo := &Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}, Policy: scheduler.FIFO{}}, Poll: 100 * time.Millisecond}
	res, err := fifo.RunRound(context.Background(), 20*time.Second, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	for _, id := range ids {
		j := waitJob(t, fifo, id, 60*time.Second, "RUNNING", func(j Job) bool { return j.State == "RUNNING" })
		if !strings.Contains(j.Comment, markPlaced) {
			t.Fatalf("job %d runs without a placement mark: %q", id, j.Comment)
		}
	}
	for _, id := range ids { // every job's script has started
		deadline := time.Now().Add(60 * time.Second)
		for len(iterations(t, metrics[id])) < 5 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	fifth, _ := submitTrainer(t, x, bin, dir, "r4", 8)

	res, err = fifo.RunRound(context.Background(), 20*time.Second, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if len(res.Plan.Keep) != 4 || len(res.Plan.Moves) != 0 {
		t.Errorf("FIFO round: kept %d, moved %+v; want the four running jobs kept", len(res.Plan.Keep), res.Plan.Moves)
	}

	time.Sleep(1100 * time.Millisecond) // attained service is counted in whole seconds
	las := &Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}, Policy: scheduler.LAS{}}, Poll: 100 * time.Millisecond}
	res, err = las.RunRound(context.Background(), 20*time.Second, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if len(res.Plan.Moves) != 1 || len(res.Preemptions) != 1 || len(res.PreemptErrs) != 0 {
		t.Fatalf("LAS round: moves %+v, preemptions %+v, errors %v; want one job paused", res.Plan.Moves, res.Preemptions, res.PreemptErrs)
	}
	paused := res.Plan.Moves[0].Job.ID
	if res.Preemptions[0].How != "requeued and held by itself" {
		t.Errorf("the paused job left its node by %q, want its own requeue after its checkpoint", res.Preemptions[0].How)
	}
	j := waitJob(t, las, paused, 30*time.Second, "held", func(j Job) bool { return j.Held() })
	if !strings.Contains(j.Comment, "synergy:waiting=preempted: paused") || !strings.Contains(j.Comment, markService) {
		t.Errorf("paused job's comment %q: want the reason and its booked service", j.Comment)
	}
	waitJob(t, las, fifth, 60*time.Second, "RUNNING", func(j Job) bool { return j.State == "RUNNING" })
	before := iterations(t, metrics[paused])
	if n := len(before); n == 0 || before[n-1] != n-1 {
		t.Fatalf("paused job's stream: %d lines, last %v", n, before)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r"+strconv.Itoa(indexOf(ids, paused))+".ck", "synthtrain.json")); err != nil || !strings.Contains(string(b), `"iterations":`+strconv.Itoa(len(before))+",") {
		t.Errorf("paused job's checkpoint %s (%v): want iterations %d, every line written", b, err, len(before))
	}
}

func indexOf(ids []int, id int) int {
	for k, v := range ids {
		if v == id {
			return k
		}
	}
	return -1
}

// failOnce fails the first command starting with prefix, as a bridge
// killed just before it would leave things.
type failOnce struct {
	Exec
	prefix string
	done   bool
}

func (f *failOnce) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if !f.done && strings.HasPrefix(strings.Join(argv, " "), f.prefix) {
		f.done = true
		return nil, &CommandError{Argv: argv, Err: context.Canceled, Stderr: "bridge killed"}
	}
	return f.Exec.Run(ctx, argv...)
}

// A bridge killed between marking a job preempted and signalling it: the
// next round finds the job still running, marked, and preempts it again;
// its run is booked in its service once.
func TestReal_RoundKilledMidPreemptionLosesNothing(t *testing.T) {
	x, _ := realSlurm(t)
	bin := buildSynthtrain(t)
	dir := t.TempDir()
	id, metrics := submitTrainer(t, x, bin, dir, "k0", 8)
	b := &Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}, Policy: scheduler.FIFO{}}, Poll: 100 * time.Millisecond}
	if _, err := b.RunRound(context.Background(), 20*time.Second, time.Now); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, b, id, 60*time.Second, "RUNNING", func(j Job) bool { return j.State == "RUNNING" })
	for deadline := time.Now().Add(60 * time.Second); len(iterations(t, metrics)) < 5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	killed := &Bridge{Cmd: &failOnce{Exec: x, prefix: "scancel --signal"}, Config: b.Config, Poll: b.Poll}
	if _, err := killed.Preempt(context.Background(), id, 20*time.Second, "test"); err == nil {
		t.Fatal("the killed bridge's preemption did not fail")
	}
	marked := waitJob(t, b, id, time.Second, "RUNNING", func(j Job) bool { return j.State == "RUNNING" })
	m, err := ParseMark(marked.Comment)
	if err != nil || m.Placed != nil || m.ServiceStart != j.StartTime {
		t.Fatalf("after the kill: %q (%v); want it marked preempted with this run booked", marked.Comment, err)
	}
	time.Sleep(1100 * time.Millisecond)
	res, err := b.RunRound(context.Background(), 20*time.Second, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if len(res.Preemptions) != 1 || res.Preemptions[0].JobID != id {
		t.Fatalf("the next round: %+v, %v; want job %d preempted", res.Preemptions, res.PreemptErrs, id)
	}
	held := waitJob(t, b, id, 30*time.Second, "held", func(j Job) bool { return j.Held() })
	m2, err := ParseMark(held.Comment)
	if err != nil || m2.Service != m.Service || m2.ServiceStart != m.ServiceStart {
		t.Errorf("service %v@%d after the second preemption, %v@%d after the first: a run booked twice (%v)", m2.Service, m2.ServiceStart, m.Service, m.ServiceStart, err)
	}
	// The round after places it again, and it resumes.
	if _, err := b.RunRound(context.Background(), 20*time.Second, time.Now); err != nil {
		t.Fatal(err)
	}
	n := len(iterations(t, metrics))
	waitJob(t, b, id, 60*time.Second, "RUNNING again", func(j Job) bool { return j.State == "RUNNING" && j.Restarts == 1 })
	for deadline := time.Now().Add(60 * time.Second); len(iterations(t, metrics)) < n+5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for i, it := range iterations(t, metrics) {
		if it != i {
			t.Fatalf("line %d is iteration %d: lost or repeated across the preemption", i, it)
		}
	}
}
