package synthtrain

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// envChild makes the test binary run synthtrain (Main, as
// cmd/synthtrain does) with the JSON argument list it holds: a real
// process that takes real signals.
const envChild = "SYNTHTRAIN_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(envChild); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Stderr.WriteString("bad " + envChild + ": " + err.Error() + "\n")
			os.Exit(100)
		}
		os.Exit(Main(context.Background(), args, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child is one synthtrain process started by startChild.
type child struct {
	cmd    *exec.Cmd
	stderr strings.Builder
}

// startChild starts synthtrain as a process of its own with env (and no
// SLURM_ or SYNERGY_ variable of the caller's).
func startChild(t *testing.T, env map[string]string, args ...string) *child {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, "SYNERGY_") && !strings.HasPrefix(kv, envChild+"=") {
			c.cmd.Env = append(c.cmd.Env, kv)
		}
	}
	c.cmd.Env = append(c.cmd.Env, envChild+"="+string(a))
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// wait returns the child's exit status.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.cmd.ProcessState.ExitCode()
}

// countLines returns the complete lines in path.
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// waitLines waits until path holds at least n complete lines, failing if
// the child exits first.
func (c *child) waitLines(t *testing.T, path string, n int) {
	t.Helper()
	exited := make(chan struct{})
	go func() {
		for c.cmd.Process != nil && countLines(path) < n {
			if err := c.cmd.Process.Signal(syscall.Signal(0)); err != nil {
				close(exited)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(exited)
	}()
	<-exited
	if got := countLines(path); got < n {
		t.Fatalf("the job wrote %d lines and exited before %d; stderr:\n%s", got, n, c.stderr.String())
	}
}

// TestPreemption_NoIterationLostOrRepeated preempts a real synthtrain
// process mid-pass three times: SIGUSR1 and SIGTERM (saved at the
// iteration boundary: the next start continues at the very next
// iteration) and SIGKILL (no save: the next start repeats what came after
// the last periodic checkpoint, and nothing before it). Joined, the runs'
// metrics give exactly the iterations, epochs and batch sizes of one
// uninterrupted run.
func TestPreemption_NoIterationLostOrRepeated(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	generate(t, GenConfig{Dir: data, Preset: mustPreset(t, "image"), Bytes: 900 << 10, Seed: 5, Classes: 2, Workers: 2})
	ds, err := ScanDataset(data, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	const batch, iters, every = 4, 40, 6
	perEpoch := (len(ds.Files) + batch - 1) / batch
	if perEpoch < 2 || len(ds.Files)%batch == 0 {
		t.Fatalf("%d files: want several batches per epoch and a short last one", len(ds.Files))
	}
	args := []string{"--data", data, "-b", "4", "-j", "2", "--gpu-step", "15ms", "--max-iterations", "40", "--checkpoint-every", "6"}

	// The reference: one uninterrupted run.
	refMetrics := filepath.Join(t.TempDir(), "ref.jsonl")
	if code, _, stderr := runMain(t, map[string]string{jobcontract.EnvMetricsFile: refMetrics}, args...); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	ref := readMetrics(t, refMetrics)
	if len(ref) != iters {
		t.Fatalf("reference: %d lines, want %d", len(ref), iters)
	}

	dir := filepath.Join(t.TempDir(), "ck")
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	env := map[string]string{jobcontract.EnvMetricsFile: metrics, EnvCheckpointDir: dir}
	type stop struct {
		sig   syscall.Signal
		after int // lines in the stream before the signal
	}
	// Signals land mid-epoch (perEpoch does not divide 7, 17 or 27).
	stops := []stop{{syscall.SIGUSR1, 7}, {syscall.SIGTERM, 17}, {syscall.SIGKILL, 27}}
	var runs [][2]int // each run's first and last line index in the stream
	for k, s := range stops {
		first := countLines(metrics)
		c := startChild(t, env, args...)
		c.waitLines(t, metrics, s.after)
		if err := c.cmd.Process.Signal(s.sig); err != nil {
			t.Fatal(err)
		}
		code := c.wait(t)
		runs = append(runs, [2]int{first, countLines(metrics)})
		its := readMetrics(t, metrics)
		last := its[len(its)-1].Iter
		ck, err := LoadCheckpoint(dir)
		if err != nil || ck == nil {
			t.Fatalf("stop %d (%v): checkpoint %v, %v", k, s.sig, ck, err)
		}
		if s.sig == syscall.SIGKILL {
			if code != -1 {
				t.Errorf("SIGKILL: exit %d", code)
			}
			if ck.Reason != "periodic" || ck.Iterations%every != 0 || ck.Iterations > last+1 || ck.Iterations <= last+1-every {
				t.Errorf("after SIGKILL at iteration %d: checkpoint %+v, want the last periodic one", last, ck)
			}
		} else {
			if code != ExitPreempted {
				t.Fatalf("%v: exit %d, want %d; stderr:\n%s", s.sig, code, ExitPreempted, c.stderr.String())
			}
			if ck.Reason != "signal" || ck.Iterations != last+1 {
				t.Errorf("%v after iteration %d: checkpoint %+v, want iterations %d saved on the signal", s.sig, last, ck, last+1)
			}
			name := map[syscall.Signal]string{syscall.SIGUSR1: "SIGUSR1", syscall.SIGTERM: "SIGTERM"}[s.sig]
			if !strings.Contains(c.stderr.String(), "stopped by "+name+"; checkpoint saved") {
				t.Errorf("%v: stderr does not say it stopped:\n%s", s.sig, c.stderr.String())
			}
		}
		if want := ck.NextBatch / perEpoch; ck.Epoch != want || ck.Epoch != *ref[ck.Iterations].Epoch {
			t.Errorf("checkpoint epoch %d, want %d (the next batch's, as the reference has it)", ck.Epoch, *ref[ck.Iterations].Epoch)
		}
		if ck.Resumes != k {
			t.Errorf("stop %d: resumes %d, want %d", k, ck.Resumes, k)
		}
	}
	first := countLines(metrics)
	c := startChild(t, env, args...)
	if code := c.wait(t); code != 0 {
		t.Fatalf("last run: exit %d\n%s", code, c.stderr.String())
	}
	runs = append(runs, [2]int{first, countLines(metrics)})
	if !strings.Contains(c.stderr.String(), "resumed at iteration") {
		t.Errorf("last run does not say it resumed:\n%s", c.stderr.String())
	}

	// Join: each run starts where the checkpoint the previous one left says.
	all := readMetrics(t, metrics)
	got := map[int]jobcontract.Iteration{}
	repeated := 0
	for r, span := range runs {
		lines := all[span[0]:span[1]]
		if len(lines) == 0 {
			t.Fatalf("run %d wrote nothing", r)
		}
		for j, it := range lines {
			if j > 0 && it.Iter != lines[j-1].Iter+1 {
				t.Errorf("run %d: iteration %d follows %d", r, it.Iter, lines[j-1].Iter)
			}
		}
		if r > 0 {
			prev := all[span[0]-1].Iter
			start := lines[0].Iter
			switch stops[r-1].sig {
			case syscall.SIGKILL:
				// Repeats the iterations after the last periodic save, no more.
				if start > prev+1 || start <= prev-every+1 || start%every != 0 {
					t.Errorf("after SIGKILL at %d, run %d started at %d: want the last multiple of %d", prev, r, start, every)
				}
				repeated += prev + 1 - start
			default:
				if start != prev+1 {
					t.Errorf("after %v at %d, run %d started at %d: an iteration lost or repeated", stops[r-1].sig, prev, r, start)
				}
			}
		}
		for _, it := range lines {
			got[it.Iter] = it
		}
	}
	t.Logf("runs %v, %d iterations repeated after the SIGKILL", runs, repeated)
	keys := make([]int, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) != iters || keys[0] != 0 || keys[len(keys)-1] != iters-1 {
		t.Fatalf("joined runs hold iterations %v, want 0..%d", keys, iters-1)
	}
	for i, it := range ref {
		g := got[i]
		if *g.Epoch != *it.Epoch || g.Samples != it.Samples {
			t.Errorf("iteration %d: epoch %d, %d samples; the uninterrupted run had %d, %d", i, *g.Epoch, g.Samples, *it.Epoch, it.Samples)
		}
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil || ck == nil || ck.Reason != "done" || ck.Iterations != iters || ck.Resumes != len(stops) {
		t.Errorf("final checkpoint %+v, %v: want done at %d after %d resumes", ck, err, iters, len(stops))
	}
	var samples int64
	for _, it := range ref {
		samples += int64(it.Samples)
	}
	if ck != nil && ck.Samples != samples {
		t.Errorf("checkpoint counts %d samples, the uninterrupted run %d", ck.Samples, samples)
	}

	// Started again once done, it does nothing and succeeds.
	n := countLines(metrics)
	if code, _, stderr := runMain(t, env, args...); code != 0 || countLines(metrics) != n {
		t.Errorf("a finished job started again: exit %d, %d new lines\n%s", code, countLines(metrics)-n, stderr)
	}
}

// TestLoader_StartContinuesTheSeededOrder checks that a loader started at
// batch k hands out exactly the batches (samples and tensors) a loader
// started at 0 hands out from its k-th on, across an epoch boundary.
func TestLoader_StartContinuesTheSeededOrder(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	generate(t, GenConfig{Dir: data, Preset: mustPreset(t, "image"), Bytes: 700 << 10, Seed: 2, Classes: 2, Workers: 2})
	ds, err := ScanDataset(data, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	cfg := LoaderConfig{Dataset: ds, Preset: mustPreset(t, "image"), Batch: 3, Workers: 2, Prefetch: 2, Seed: 9}
	take := func(cfg LoaderConfig, n int) []Batch {
		l, err := StartLoader(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var out []Batch
		for range n {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			b.Data = slices.Clone(b.Data)
			out = append(out, b)
		}
		return out
	}
	perEpoch := (len(ds.Files) + 2) / 3
	all := take(cfg, 3*perEpoch)
	for _, k := range []int{1, perEpoch - 1, perEpoch + 1} {
		c := cfg
		c.Start = k
		got := take(c, len(all)-k)
		for j, b := range got {
			w := all[k+j]
			if b.Index != w.Index || b.Epoch != w.Epoch || b.Samples != w.Samples || !slices.Equal(b.Data, w.Data) {
				t.Fatalf("start %d: batch %d is (index %d, epoch %d, %d samples), want (%d, %d, %d) with the same tensor",
					k, j, b.Index, b.Epoch, b.Samples, w.Index, w.Epoch, w.Samples)
			}
		}
	}
	c := cfg
	c.Start = -1
	if _, err := StartLoader(context.Background(), c); err == nil {
		t.Error("start -1 accepted")
	}
}

func TestCheckpoint_RefusedWhenItIsNotThisRunsOrNotOurs(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	generate(t, GenConfig{Dir: data, Preset: mustPreset(t, "image"), Bytes: 300 << 10, Seed: 1, Classes: 1, Workers: 1})
	dir := t.TempDir()
	env := map[string]string{EnvCheckpointDir: dir}
	if code, _, stderr := runMain(t, env, "--data", data, "-b", "2", "--gpu-step", "1ms", "--max-iterations", "3"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// Another batch size would resume at the wrong batch: refused, named.
	code, _, stderr := runMain(t, env, "--data", data, "-b", "3", "--gpu-step", "1ms", "--max-iterations", "5")
	if code != exitFail || !strings.Contains(stderr, "batch 2, now 3") || !strings.Contains(stderr, CheckpointFile) {
		t.Errorf("another batch: exit %d, stderr:\n%s", code, stderr)
	}
	for name, content := range map[string]string{
		"other job":   `{"version":1,"job":"other","iterations":1}`,
		"negative":    `{"version":1,"job":"synthtrain","iterations":-1}`,
		"unknown key": `{"version":1,"job":"synthtrain","iterations":1,"x":1}`,
		"past":        `{"version":1,"job":"synthtrain","iterations":1,"next_batch":5}`,
		"huge":        `{"version":1,"job":"synthtrain","reason":"` + strings.Repeat("x", maxCheckpointBytes) + `"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, CheckpointFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := LoadCheckpoint(dir); err == nil {
			t.Errorf("%s: accepted as %+v", name, c)
		}
	}
	if err := os.Remove(filepath.Join(dir, CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, CheckpointFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(dir); err == nil {
		t.Error("a directory in the checkpoint's place accepted")
	}
}

func TestCheckpointDirAndRequeueMode(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		env       func(string) string
		dir, mode string
		bad       bool
	}{
		{env: env(), dir: "", mode: RequeueNone},
		{env: env(EnvCheckpointDir, "/ck"), dir: "/ck", mode: RequeueNone},
		{env: env("SLURM_JOB_ID", "42", "SLURM_SUBMIT_DIR", "/home/u"), dir: "/home/u/synergy-checkpoints/42", mode: RequeueSelf},
		{env: env("SLURM_JOB_ID", "43", "SLURM_ARRAY_JOB_ID", "40", "SLURM_ARRAY_TASK_ID", "3", EnvRequeue, "hold"), dir: "synergy-checkpoints/40_3", mode: RequeueHeld},
		{env: env("SLURM_JOB_ID", "42;rm", EnvRequeue, "none"), dir: "", mode: RequeueNone},
		{env: env(EnvRequeue, "hold"), bad: true},
		{env: env("SLURM_JOB_ID", "1", EnvRequeue, "later"), bad: true},
	} {
		dir := CheckpointDir(tc.env)
		mode, err := requeueMode(tc.env)
		if tc.bad {
			if err == nil {
				t.Errorf("%s=%q accepted as %s", EnvRequeue, tc.env(EnvRequeue), mode)
			}
			continue
		}
		if err != nil || mode != tc.mode || dir != tc.dir {
			t.Errorf("dir %q mode %q err %v; want %q %q", dir, mode, err, tc.dir, tc.mode)
		}
	}
}
