package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/sensitivity"
)

// needCgroups skips (or, under SYNERGY_REQUIRE=cgroup, fails) without root
// and a cgroup file system.
func needCgroups(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testreq.Skip(t, "cgroup", "not root")
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		testreq.Skip(t, "cgroup", "no /sys/fs/cgroup")
	}
}

// leftoverCgroups lists cgroup directories a job named name left behind.
func leftoverCgroups(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "synergy-"+name+"-") {
			out = append(out, path)
			return fs.SkipDir
		}
		return nil
	})
	return out
}

// leftoverProcesses lists processes whose command line mentions marker.
func leftoverProcesses(t *testing.T, marker string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, marker) {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

// TestProfileE2E_InterruptLeavesValidProfileAndResumeFinishes runs the
// built synergy as a process of its own: it is about what a real SIGINT
// (Ctrl-C) to that process leaves behind, which main's signal handling
// turns into a cancelled context.
func TestProfileE2E_InterruptLeavesValidProfileAndResumeFinishes(t *testing.T) {
	needCgroups(t)
	b := buildBinaries(t)
	data := genDataset(t, b.synthtrain, "language", "8MiB")
	out := filepath.Join(t.TempDir(), "p.json")
	job := fmt.Sprintf("e2eint%d", os.Getpid())
	args := []string{"profile", "--strategy", "axes", "--cpus", "0.5,1,2", "--mem-limits", "32MiB", "--data", data, "-b", "64",
		"--max-iterations", "60", "--point-timeout", "60s", "--job-name", job, "--out", out,
		"--", b.synthtrain, "--preset", "language", "--gpu-step", "20ms"}

	cmd := exec.Command(b.synergy, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ctrl-C as soon as the second point has started.
	var log bytes.Buffer
	sc := bufio.NewScanner(stderr)
	sent := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !sent && strings.HasPrefix(sc.Text(), "[2/4]") {
			time.Sleep(300 * time.Millisecond) // let the job get going in its cgroup
			cmd.Process.Signal(os.Interrupt)
			sent = true
		}
	}
	err = cmd.Wait()
	if !sent {
		t.Fatalf("never reached the second point:\n%s", log.String())
	}
	if err == nil {
		t.Fatalf("interrupted profile exited 0:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "--resume") {
		t.Errorf("the interrupt message does not say how to finish:\n%s", log.String())
	}
	p, err := sensitivity.Load(out)
	if err != nil {
		t.Fatalf("partial profile is not valid: %v", err)
	}
	if n := len(p.MeasuredOK()); n != 1 {
		t.Errorf("partial profile has %d measured points, want the 1 finished before Ctrl-C", n)
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left after Ctrl-C: %v", left)
	}
	if left := leftoverProcesses(t, "--job-name "+job); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C: %v", left)
	}

	res := exec.Command(b.synergy, append([]string{args[0], "--resume"}, args[1:]...)...)
	outb, err := res.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, outb)
	}
	if !strings.Contains(string(outb), "1 measured point(s) kept") || strings.Contains(string(outb), "[1/4]") ||
		!strings.Contains(string(outb), "[2/4]") {
		t.Errorf("resume did not keep the measured point and go on from the second:\n%s", outb)
	}
	p, err = sensitivity.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.MeasuredOK()); n != 4 {
		t.Errorf("resumed profile has %d measured points, want 4:\n%s", n, outb)
	}
	if len(p.Cells) != 3*2 {
		t.Errorf("resumed profile has %d cells, want the 3×2 grid", len(p.Cells))
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left after resume: %v", left)
	}
}

func TestProfileE2E_BadFlagsNameTheFlag(t *testing.T) {
	data := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mem-limits", "8XB", "--", "/bin/true"}, `--mem-limits: "8XB" is not a size`},
		{[]string{"--mem-limits", "1GiB,banana", "--", "/bin/true"}, `--mem-limits: "banana" is not a size`},
		{[]string{"--cpus", "1,-2", "--", "/bin/true"}, `--cpus: "-2" is not a positive number`},
		{[]string{"--cpus", "64", "--", "/bin/true"}, "--cpus: 64 cores asked"},
		{[]string{"--cpus", "1", "--cpu", "2", "--", "/bin/true"}, "--cpus and --cpu"},
		{[]string{"-b", "0", "--", "/bin/true"}, "--batch: 0"},
		{[]string{"--runner", "kube", "--", "/bin/true"}, `--runner: "kube"`},
		{[]string{"--data", "/nonexistent/x", "--", "/bin/true"}, "--data:"},
		{[]string{"--disk-read-bps", "fast", "--data", data, "--", "/bin/true"}, "--disk-read-bps:"},
		{[]string{"--runner", "docker", "--", "/bin/true"}, "--docker-img: needed"},
		{[]string{"--cpus", "1"}, "no training script"},
	} {
		out, code := runCLIOutput(t, append([]string{"profile", "--out", filepath.Join(t.TempDir(), "p.json")}, tc.args...)...)
		if code == 0 {
			t.Errorf("%v: exited 0, want an error", tc.args)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: output %q does not contain %q", tc.args, out, tc.want)
		}
	}
}

func TestProfileE2E_CrashAndOOMAreRecorded(t *testing.T) {
	needCgroups(t)
	synthtrain := buildSynthtrain(t)
	if _, err := exec.LookPath("python3"); err != nil {
		testreq.Skip(t, "python3", "python3 not installed")
	}
	data := genDataset(t, synthtrain, "language", "2MiB")
	dir := t.TempDir()

	// A script that fails at once, with no memory limit and before its
	// first iteration: recorded as crashed with its status and its last
	// words, and, since every launch would crash alike, the profile stops
	// after that one launch (issue 44), saying so, and exits 1 (a crash of
	// the job, not of the profiler).
	job := fmt.Sprintf("e2ecrash%d", os.Getpid())
	out := filepath.Join(dir, "crash.json")
	log, code := runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1,2", "--mem-limits", "64MiB", "--data", data,
		"--job-name", job, "--out", out, "--", "/bin/sh", "-c", "echo 'cannot open checkpoint' >&2; exit 3", "sh")
	if code != 1 || !strings.Contains(log, "crashed before its first iteration") || !strings.Contains(log, "stops after this one launch") {
		t.Fatalf("a crash at start: exit %d, want 1 saying the profile stops after one launch\n%s", code, log)
	}
	p, err := sensitivity.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if cell := p.Cell(1, 0); cell == nil || cell.Failure == nil || cell.Failure.Class != sensitivity.FailCrashed || cell.Failure.ExitCode != 3 ||
		!strings.Contains(cell.Failure.Message, "cannot open checkpoint") {
		t.Errorf("cpus=1: cell %+v, want crashed with exit code 3 and the job's last line", cell)
	}
	if p.Cost.Launches != 1 {
		t.Errorf("%d launches, want 1: a crash before the first iteration is not relaunched", p.Cost.Launches)
	}
	if !strings.Contains(log, "FAILED (crashed)") {
		t.Errorf("progress does not report the failure:\n%s", log)
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}

	// A script that allocates past its memory limit: fine unlimited, OOM-killed
	// under 64MiB; each recorded as such.
	script := filepath.Join(dir, "hog.py")
	os.WriteFile(script, []byte("import sys\nb = b'x' * (300 << 20)\nprint('allocated', len(b))\n"), 0o755)
	job = fmt.Sprintf("e2eoom%d", os.Getpid())
	out = filepath.Join(dir, "oom.json")
	log, code = runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB", "--data", data,
		"--job-name", job, "--out", out, "--", "python3", script, "{iterations}")
	if code != 0 {
		t.Fatalf("an OOM-killed job must not crash the profiler: exit %d\n%s", code, log)
	}
	p, err = sensitivity.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Cell(1, 0); c == nil || c.Failure != nil || c.Stats.MetricsSource != sensitivity.MetricsWall {
		t.Errorf("unlimited cell = %+v, want a wall-clock measurement (the script writes no metrics)", c)
	}
	if c := p.Cell(1, 64<<20); c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailOOMKilled {
		t.Errorf("64MiB cell = %+v, want oom_killed", c)
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}
