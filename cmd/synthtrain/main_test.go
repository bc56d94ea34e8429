package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/models/synthtrain"
)

// When this variable is set the test binary is synthtrain itself, so the
// tests below run the real main in a real process: exit codes, signals and
// the environment as the profiler will see them.
const beMain = "SYNTHTRAIN_TEST_BE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(beMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func command(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), append([]string{beMain + "=1"}, env...)...)
	return cmd
}

func run(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := command(t, env, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestSynthtrain_ExitCodes(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"--help"}, 0, "usage:"},
		{[]string{"train", "--data", "/x", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"-b", "-3", "--data", "/x"}, 2, "--batch"},
		{[]string{"--data", filepath.Join(t.TempDir(), "missing"), "--max-iterations", "1"}, 1, "missing"},
	}
	for _, tt := range tests {
		code, out, errs := run(t, nil, tt.args...)
		if code != tt.wantCode || !strings.Contains(out+errs, tt.wantOut) {
			t.Errorf("synthtrain %q: exit %d, want %d; output %q, want it to contain %q", tt.args, code, tt.wantCode, out+errs, tt.wantOut)
		}
	}
}

func TestSynthtrain_GenThenTrain(t *testing.T) {
	data := filepath.Join(t.TempDir(), "audio")
	code, out, errs := run(t, nil, "gen", "--dir", data, "--bytes", "4MiB", "--preset", "audio", "--classes", "2")
	if code != 0 || !strings.HasPrefix(out, "made ") {
		t.Fatalf("gen: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	code, _, errs = run(t, []string{jobcontract.EnvMetricsFile + "=" + metrics},
		"--preset", "audio", "--data", data, "--gpu-step", "1ms", "-b", "2", "-j", "2", "--max-iterations", "5")
	if code != 0 {
		t.Fatalf("train: exit %d, stderr %q", code, errs)
	}
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d metrics lines, want 5:\n%s", len(lines), b)
	}
	// 4 MiB of 1–2 MiB clips is 3 or 4 files: an epoch is batches of 2, 1
	// or 2, 2.
	ds, err := synthtrain.ScanDataset(data, ".wav")
	if err != nil {
		t.Fatal(err)
	}
	epoch0 := 0
	for i, l := range lines {
		it, err := jobcontract.ParseIteration([]byte(l))
		if err != nil || it.Iter != i || it.Samples < 1 || it.Samples > 2 {
			t.Errorf("line %d %q: %+v, %v", i, l, it, err)
		}
		if it.Epoch != nil && *it.Epoch == 0 {
			epoch0 += it.Samples
		}
	}
	if epoch0 != len(ds.Files) {
		t.Errorf("epoch 0 loaded %d samples, want every one of the %d files", epoch0, len(ds.Files))
	}
}

// The profiler normally SIGKILLs the job; a SIGTERM (docker stop, Slurm's
// stop) must stop it too, at the end of the iteration in progress with the
// job contract's preempted status 3 (docs/job-contract.md, "Checkpoint and
// resume"), and leave only whole lines behind.
func TestSynthtrain_SIGTERMStopsAnEndlessRun(t *testing.T) {
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	cmd := command(t, []string{jobcontract.EnvMetricsFile + "=" + metrics}, "--synthetic-data", "--gpu-step", "5ms")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the stream to start (a guard against hanging, not a timing check).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(metrics); bytes.Count(b, []byte("\n")) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no metrics after 30s; stderr %q", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != synthtrain.ExitPreempted {
		t.Fatalf("after SIGTERM: %v, want exit status %d; stderr %q", err, synthtrain.ExitPreempted, errb.String())
	}
	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		if _, err := jobcontract.ParseIteration(sc.Bytes()); err != nil {
			t.Errorf("line %d: %v", n, err)
		}
		n++
	}
	if n < 3 {
		t.Errorf("%d lines, want >= 3", n)
	}
}

// The control channel end to end: the real binary, the environment the
// profiler sets, commands appended while it runs.
func TestSynthtrain_ControlChannel(t *testing.T) {
	data := filepath.Join(t.TempDir(), "lang")
	if code, out, errs := run(t, nil, "gen", "--dir", data, "--bytes", "64KiB", "--preset", "language", "--classes", "2"); code != 0 {
		t.Fatalf("gen: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	dir := t.TempDir()
	metrics, ctlPath, ackPath := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "control.jsonl"), filepath.Join(dir, "control-ack.jsonl")
	cmd := command(t, []string{jobcontract.EnvMetricsFile + "=" + metrics, jobcontract.EnvControlFile + "=" + ctlPath,
		jobcontract.EnvControlAckFile + "=" + ackPath},
		"--preset", "language", "--data", data, "-b", "2", "-j", "2", "--gpu-step", "3ms", "--max-iterations", "1000000")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	acks := jobcontract.NewLineReader(ackPath)
	var got []jobcontract.ControlAck
	// wait reads answers until one to seq arrives (a guard against
	// hanging, not a timing check).
	wait := func(seq int) jobcontract.ControlAck {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			lines, err := acks.Next()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				a, err := jobcontract.ParseAck(l)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, a)
			}
			for _, a := range got {
				if a.Seq == seq {
					return a
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer to %d after 30s; answers %+v; stderr %q", seq, got, errb.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if h := wait(0); h.Workers != 2 {
		t.Errorf("hello %+v, want workers 2", h)
	}
	one, yes, no, three := 1, true, false, 3
	for _, c := range []jobcontract.ControlCommand{
		{Seq: 1, Workers: &one}, {Seq: 2, Replay: &yes}, {Seq: 3, Replay: &no, Workers: &three},
	} {
		if err := jobcontract.AppendControl(ctlPath, c); err != nil {
			t.Fatal(err)
		}
		a := wait(c.Seq)
		if a.Error != "" || (c.Workers != nil && a.Workers != *c.Workers) || (c.Replay != nil && a.Replay != *c.Replay) {
			t.Errorf("answer %+v to seq %d", a, c.Seq)
		}
	}
	f, err := os.OpenFile(ctlPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"seq\":4,\"workers\":-2}\n{\"seq\":5,\"workers\":2}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if a := wait(4); !strings.Contains(a.Error, "negative") || a.Workers != 3 {
		t.Errorf("answer to a bad command %+v, want an error and workers 3 kept", a)
	}
	last := wait(5)
	if last.Error != "" || last.Workers != 2 {
		t.Errorf("answer %+v, want workers 2: the job went on after the bad command", last)
	}
	// An answer is written when its batch reaches the loop, before the
	// iteration's line: wait for that line.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(metrics); bytes.Count(b, []byte("\n")) > last.Iter {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line for iteration %d after 30s", last.Iter)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Every answer's iteration is in the stream, and its ts inside it.
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	var its []jobcontract.Iteration
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		it, err := jobcontract.ParseIteration(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	for _, a := range got {
		if a.Error != "" {
			continue
		}
		if a.Iter >= len(its) || its[a.Iter].Iter != a.Iter || a.TS > its[a.Iter].TS || (a.Iter > 0 && a.TS < its[a.Iter-1].TS) {
			t.Errorf("answer %+v: not within its iteration of the stream (%d lines)", a, len(its))
		}
	}
}
