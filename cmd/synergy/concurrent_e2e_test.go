package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner/hostlock"
	"github.com/synergy-sched/synergy/sensitivity"
)

// TestProfileE2E_ConcurrentRunsShareNothing starts two synergy processes at
// once, each with a one-core CPU axis and a memory point on a dataset of its
// own (runs on one dataset serialize their points: runner/hostlock's tests
// cover that), in a registry directory of their own. Every point's job
// records the CPUs it may run on (Cpus_allowed_list, as the job itself sees
// it): the two runs must never have used a common core, and the second must
// have claimed its core while the first held the other (they overlapped).
// A third run on the first one's --out, started while it runs, must be
// refused naming its PID.
func TestProfileE2E_ConcurrentRunsShareNothing(t *testing.T) {
	needCgroups(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs for two one-core runs at once")
	}
	b := buildBinaries(t)
	dir := t.TempDir()
	registry := filepath.Join(dir, "registry")
	// The job: note the CPUs it may use, then train.
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status >> \"$CPULOG\"\nexec "+b.synthtrain+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	type run struct {
		cmd    *exec.Cmd
		out    string
		log    string
		stderr *bytes.Buffer
	}
	start := func(name, out string) *run {
		data := genDataset(t, b.synthtrain, "language", "4MiB")
		r := &run{out: out, log: filepath.Join(dir, name+".cpus"), stderr: &bytes.Buffer{}}
		r.cmd = exec.Command(b.synergy, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "32MiB", "--data", data,
			"-b", "16", "--max-iterations", "80", "--point-timeout", "60s", "--stall-breakdown=false",
			"--job-name", fmt.Sprintf("e2econc%s%d", name, os.Getpid()), "--out", out, "--", script, "--preset", "language", "--gpu-step", "10ms")
		r.cmd.Env = append(os.Environ(), hostlock.EnvDir+"="+registry, "CPULOG="+r.log)
		r.cmd.Stderr = r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := start("a", filepath.Join(dir, "a.json"))
	// Let a take its lock and core first.
	for deadline := time.Now().Add(30 * time.Second); len(hostlock.Holders(filepath.Join(dir, "a.json.lock"))) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first run never locked its --out")
		}
	}
	bRun := start("b", filepath.Join(dir, "b.json"))
	// A third run into a's --out is refused at once, naming a.
	third, err := exec.Command(b.synergy, "profile", "--cpus", "1", "--out", a.out, "--", script).CombinedOutput()
	if err == nil || !strings.Contains(string(third), "another synergy run is writing") ||
		!strings.Contains(string(third), fmt.Sprintf("PID %d", a.cmd.Process.Pid)) {
		t.Errorf("third run on the first one's --out: %v\n%s\nwant a refusal naming PID %d", err, third, a.cmd.Process.Pid)
	}
	for _, r := range []*run{a, bRun} {
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("%s: %v\n%s", r.out, err, r.stderr)
		}
		p, err := sensitivity.Load(r.out)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.MeasuredOK()); n != 2 {
			t.Errorf("%s: %d points measured, want 2\n%s", r.out, n, r.stderr)
		}
	}
	cpus := func(r *run) map[string]bool {
		b, err := os.ReadFile(r.log)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			set[strings.TrimSpace(strings.TrimPrefix(l, "Cpus_allowed_list:"))] = true
		}
		return set
	}
	ca, cb := cpus(a), cpus(bRun)
	for c := range ca {
		if cb[c] {
			t.Errorf("both runs used CPU %s (a: %v, b: %v)", c, ca, cb)
		}
	}
	if len(ca) != 1 || len(cb) != 1 {
		t.Errorf("each run's points must stay on its one claimed core: a %v, b %v", ca, cb)
	}
	t.Logf("run a used CPUs %v, run b %v", ca, cb)
	if !strings.Contains(a.stderr.String(), "points run on CPU 0,") || !strings.Contains(bRun.stderr.String(), "points run on CPU 1,") {
		t.Errorf("want a on CPU 0 and b, claiming while a held it, on CPU 1:\na: %s\nb: %s", a.stderr, bRun.stderr)
	}
	for _, out := range []string{a.out, bRun.out} {
		if _, err := os.Stat(out + ".lock"); !os.IsNotExist(err) {
			t.Errorf("%s.lock left behind", out)
		}
	}
}

// TestProfileE2E_HostWaitGivesUpNamingTheHolder: with every core of a
// registry held by another run (this test process), a profile with
// --host-wait gives up after that long, naming the flag and the holder's
// PID, instead of waiting for ever; nothing has been measured.
func TestProfileE2E_HostWaitGivesUpNamingTheHolder(t *testing.T) {
	needCgroups(t)
	st := buildSynthtrain(t)
	registry := t.TempDir()
	t.Setenv(hostlock.EnvDir, registry)
	var all []int
	for c := range runtime.NumCPU() {
		all = append(all, c)
	}
	held, err := hostlock.ClaimCores(context.Background(), registry, len(all), all, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	out := filepath.Join(t.TempDir(), "p.json")
	start := time.Now()
	stdout, stderr, err := runCLI(t, "profile", "--strategy", "axes", "--cpus", "1", "--stall-breakdown=false",
		"--host-wait", "1s", "--out", out, "--", st, "--preset", "language", "--gpu-step", "10ms")
	if err == nil {
		t.Fatalf("profile with every core held succeeded:\n%s%s", stdout, stderr)
	}
	for _, want := range []string{"--host-wait 1s", "gave up waiting", fmt.Sprintf("PID %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("gave up after %v, before --host-wait 1s", waited)
	}
	if p, err := sensitivity.Load(out); err == nil && len(p.MeasuredOK()) > 0 {
		t.Errorf("%d points measured while the cores were held", len(p.MeasuredOK()))
	}
}
