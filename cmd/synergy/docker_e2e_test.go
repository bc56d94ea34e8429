package main

// End-to-end tests of `synergy profile --runner=docker` against the real
// Docker Engine on this machine: synergy, run in this process, profiles the
// static synthtrain binary in a FROM scratch image built through the Engine
// API, and its matrix is compared with the local runner's on the same
// points. They skip (fail under SYNERGY_REQUIRE=docker, or =cgroup for the
// local half) when the engine or cgroups are not there.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner/docker"
	"github.com/synergy-sched/synergy/sensitivity"
)

// synthtrainImage builds a FROM scratch image holding the static synthtrain
// binary at /usr/local/bin/synthtrain, removed when the test ends. It skips
// the test when no Docker daemon answers.
func synthtrainImage(t *testing.T, synthtrain string) string {
	t.Helper()
	r, err := docker.New(docker.Options{})
	if err != nil {
		testreq.Skip(t, "docker", err.Error())
	}
	t.Cleanup(func() { r.Close() })
	tag := fmt.Sprintf("synergy-e2e-synthtrain:%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx := context.Background()
	t.Cleanup(func() {
		if err := r.RemoveImage(context.Background(), tag); err != nil {
			t.Errorf("remove test image: %v", err)
		}
	})
	if _, err := r.BuildScratchImage(ctx, tag, map[string]string{"/usr/local/bin/synthtrain": synthtrain}, nil); err != nil {
		t.Fatal(err)
	}
	return tag
}

// e2eJobName is a job name unique to this test binary and test, so that the
// leftover check below sees only this test's containers even when other
// packages' tests use the engine at the same time.
func e2eJobName(t *testing.T) string {
	return fmt.Sprintf("e2e-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
}

// assertNoProfileContainers fails the test if any container synergy created
// for job (labels synergy.profile=1, synergy.job=job) is still there,
// running or not, and removes it.
func assertNoProfileContainers(t *testing.T, job string) {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	f := make(client.Filters).Add("label", docker.LabelProfile+"=1").Add("label", docker.LabelJob+"="+job)
	left, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	for _, l := range left.Items {
		t.Errorf("container left behind: %.12s %s labels %v", l.ID, l.State, l.Labels)
		_, _ = c.ContainerRemove(ctx, l.ID, client.ContainerRemoveOptions{Force: true})
	}
}

// profileRun is one run of `synergy profile`.
type profileRun struct {
	out      string // the profile's path
	stderr   string // all it printed, main's error line included
	exitCode int
}

// runProfileCmd runs `synergy profile ARGS` in this process with --out in a
// fresh directory and extra environment entries (set for this test).
func runProfileCmd(t *testing.T, env []string, args ...string) profileRun {
	t.Helper()
	out := filepath.Join(t.TempDir(), "profile.json")
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	log, code := runCLIOutput(t, append([]string{"profile", "--out", out}, args...)...)
	return profileRun{out: out, stderr: log, exitCode: code}
}

// load reads the run's profile or fails the test, showing synergy's output.
func (r profileRun) load(t *testing.T) *sensitivity.Profile {
	t.Helper()
	if r.exitCode != 0 {
		t.Fatalf("synergy profile exited %d:\n%s", r.exitCode, r.stderr)
	}
	p, err := sensitivity.Load(r.out)
	if err != nil {
		t.Fatalf("load profile: %v\nsynergy output:\n%s", err, r.stderr)
	}
	return p
}

// The agreement test's workload. Its cells are each bound by a limit the
// runners set, not by what else runs on this 2-core host, so that two runs
// are comparable to well within 10% (see TestDockerE2E_AgreesWithLocal):
//
//   - warm cells (memory unlimited, dataset cached): the emulated GPU step,
//     40 ms per batch of 4 ≈ 100 samples/s; the loader needs ~4 ms of CPU
//     per batch, far below the cpuset's core even when shared.
//   - cold cells (16MiB limit on a 64MiB dataset, reads throttled to
//     64MB/s): nearly every batch (4 files of 1–2 MiB) is read from disk at
//     the throttled rate, ≈ 40 samples/s.
//
// The grid strategy measures every cell (0.5 and 1 core × 16MiB and
// unlimited), so both runners measure the same points whatever their noise.
const (
	agreeDatasetSize = "64MiB"
	agreeCPUs        = "0.5,1"
	agreeMemLimit    = "16MiB"
	agreeReadBPS     = "64MB"
	agreeBatch       = "4"
	agreeTargetCIPct = 3.0  // stop a point at ±3%: the difference of two such cells is within ±4.3% (95%)
	agreeMaxRelDiff  = 0.10 // the acceptance bound of issue 5
	agreeRetries     = 2    // extra runs of a CPU count whose cell did not converge
)

// TestDockerE2E_AgreesWithLocal profiles the same job on the same points
// with the local runner and with the docker runner (synthtrain in a scratch
// image) and requires every measured cell to agree within 10%.
//
// Only converged cells are compared. On this busy 2-core host (load 5–7
// while others build) a cell whose throughput is set by spare CPU says
// nothing about the runners: the image preset decoding JPEGs gave 142 and
// 149 samples/s at cpus=1 and 2 on the local runner, 129 and 177 on the
// docker one, each with a 95% interval of ±18–30% after 80 iterations, as
// other processes took the cpuset's cores. So the workload keeps every cell bound by a runner-set limit
// (emulated step, memory limit + read throttle), every point runs until its
// 95% interval is within ±3%, and a CPU count whose cell did not converge
// is measured again (at most twice) before the comparison gives up. On this
// machine the four cells agree within about 1%.
func TestDockerE2E_AgreesWithLocal(t *testing.T) {
	synthtrain := buildSynthtrain(t)
	needCgroups(t)
	image := synthtrainImage(t, synthtrain)
	data := genDataset(t, synthtrain, "audio", agreeDatasetSize)
	job := e2eJobName(t)
	t.Cleanup(func() { assertNoProfileContainers(t, job) })

	common := func(cpus string) []string {
		return []string{"--strategy", "grid", "--cpus", cpus, "--mem-limits", agreeMemLimit, "--disk-read-bps", agreeReadBPS,
			"-b", agreeBatch, "--data", data, "--target-ci", strconv.FormatFloat(agreeTargetCIPct, 'g', -1, 64),
			"--max-iterations", "400", "--point-timeout", "40s", "--job-name", job}
	}
	profile := func(runnerName, cpus string) *sensitivity.Profile {
		args := common(cpus)
		cmd := []string{"--", synthtrain, "--preset", "audio"}
		if runnerName == "docker" {
			args = append(args, "--runner", "docker", "--docker-img", image)
			cmd = []string{"--", "synthtrain", "--preset", "audio"}
		}
		p := runProfileCmd(t, nil, append(args, cmd...)...).load(t)
		for _, c := range p.Cells {
			if c.Measured && c.Failure != nil {
				t.Fatalf("%s runner: point cpus=%g mem=%d failed: %s: %s", runnerName, c.CPUs, c.MemLimitBytes, c.Failure.Class, c.Failure.Message)
			}
			// The CPU speed probe (profiler/cpuspeed) found the job's
			// cpuset in its real cgroup, the container's included.
			if c.Measured && (c.Stats == nil || c.Stats.CPUSpeedMOps <= 0) {
				t.Errorf("%s runner: point cpus=%g mem=%d has no cpu_speed_mops", runnerName, c.CPUs, c.MemLimitBytes)
			}
		}
		return p
	}

	// cells holds each runner's converged-or-latest measured cells by point.
	type key struct {
		cpus float64
		mem  int64
	}
	cells := map[string]map[key]sensitivity.Cell{"local": {}, "docker": {}}
	merge := func(runnerName string, p *sensitivity.Profile) {
		for _, c := range p.Cells {
			if !c.Measured {
				continue
			}
			k := key{c.CPUs, c.MemLimitBytes}
			if old, ok := cells[runnerName][k]; ok && old.Stats.Converged && !c.Stats.Converged {
				continue
			}
			cells[runnerName][k] = c
		}
	}
	merge("local", profile("local", agreeCPUs))
	merge("docker", profile("docker", agreeCPUs))

	// Re-measure CPU counts with a cell that did not converge.
	for attempt := 0; attempt < agreeRetries; attempt++ {
		again := map[string]map[float64]bool{}
		for runnerName, byKey := range cells {
			for k, c := range byKey {
				if !c.Stats.Converged {
					if again[runnerName] == nil {
						again[runnerName] = map[float64]bool{}
					}
					again[runnerName][k.cpus] = true
					t.Logf("%s runner: cell cpus=%g mem=%d did not converge: %.1f ±%.1f%% samples/s after %d iterations (%s)",
						runnerName, k.cpus, k.mem, c.SamplesPerS, 100*c.SamplesPerSCI95/c.SamplesPerS, c.Stats.Iterations, c.Stats.StopReason)
				}
			}
		}
		if len(again) == 0 {
			break
		}
		for runnerName, cpus := range again {
			for c := range cpus {
				t.Logf("%s runner: measuring cpus=%g again", runnerName, c)
				merge(runnerName, profile(runnerName, strconv.FormatFloat(c, 'g', -1, 64)))
			}
		}
	}

	memLimit := int64(16 << 20)
	want := []key{{0.5, 0}, {0.5, memLimit}, {1, 0}, {1, memLimit}}
	for _, k := range want {
		l, lok := cells["local"][k]
		d, dok := cells["docker"][k]
		label := fmt.Sprintf("cpus=%g mem=%s", k.cpus, map[bool]string{true: "unlimited", false: agreeMemLimit}[k.mem == 0])
		if !lok || !dok {
			t.Errorf("%s: not measured by both runners (local %v, docker %v)", label, lok, dok)
			continue
		}
		for _, rc := range []struct {
			name string
			c    sensitivity.Cell
		}{{"local", l}, {"docker", d}} {
			if !rc.c.Stats.Converged {
				t.Errorf("%s: the %s runner's cell did not converge after %d extra runs (%.1f ±%.1f%% samples/s, %s): the host is too busy to compare",
					label, rc.name, agreeRetries, rc.c.SamplesPerS, 100*rc.c.SamplesPerSCI95/rc.c.SamplesPerS, rc.c.Stats.StopReason)
			}
		}
		mean := (l.SamplesPerS + d.SamplesPerS) / 2
		diff := math.Abs(l.SamplesPerS-d.SamplesPerS) / mean
		t.Logf("%s: local %.1f ±%.1f, docker %.1f ±%.1f samples/s: %.1f%% apart", label, l.SamplesPerS, l.SamplesPerSCI95, d.SamplesPerS, d.SamplesPerSCI95, 100*diff)
		if diff > agreeMaxRelDiff {
			t.Errorf("%s: local %.1f and docker %.1f samples/s are %.1f%% apart, over %.0f%%", label, l.SamplesPerS, d.SamplesPerS, 100*diff, 100*agreeMaxRelDiff)
		}
	}
	// The limits did act: the cold cell under 16MiB and the read throttle is
	// far below the warm one at the same CPU count (the runners' limits,
	// not just the step, shape the matrix).
	for _, r := range []string{"local", "docker"} {
		for _, c := range []float64{0.5, 1} {
			warm, cold := cells[r][key{c, 0}], cells[r][key{c, memLimit}]
			if !(cold.SamplesPerS < 0.6*warm.SamplesPerS) {
				t.Errorf("%s runner, cpus=%g: cold cell %.1f samples/s is not well below the warm %.1f: memory limit or read throttle not applied?", r, c, cold.SamplesPerS, warm.SamplesPerS)
			}
		}
	}
}

// TestDockerE2E_BadImage: an image that is not there is refused up front
// with a message naming it, and nothing is created.
func TestDockerE2E_BadImage(t *testing.T) {
	if _, err := docker.New(docker.Options{}); err != nil {
		testreq.Skip(t, "docker", err.Error())
	}
	data := t.TempDir()
	image := "synergy-e2e-no-such-image:" + strconv.Itoa(os.Getpid())
	job := e2eJobName(t)
	run := runProfileCmd(t, nil, "--runner", "docker", "--docker-img", image, "--cpus", "1", "--mem-limits", "64MiB",
		"--data", data, "--job-name", job, "--", "synthtrain")
	if run.exitCode == 0 {
		t.Fatalf("synergy profile with a missing image exited 0:\n%s", run.stderr)
	}
	for _, want := range []string{"--docker-img", image, "not found locally", "never pulls"} {
		if !strings.Contains(run.stderr, want) {
			t.Errorf("error does not say %q:\n%s", want, run.stderr)
		}
	}
	if _, err := os.Stat(run.out); err == nil {
		t.Errorf("a profile was written at %s", run.out)
	}
	assertNoProfileContainers(t, job)
}

// TestDockerE2E_DaemonDown: no daemon at DOCKER_HOST gives a clear error
// naming the address. It needs no engine.
func TestDockerE2E_DaemonDown(t *testing.T) {
	sock := "unix:///nonexistent/synergy-e2e.sock"
	run := runProfileCmd(t, []string{"DOCKER_HOST=" + sock}, "--runner", "docker", "--docker-img", "whatever:1",
		"--cpus", "1", "--mem-limits", "64MiB", "--data", t.TempDir(), "--", "synthtrain")
	if run.exitCode == 0 {
		t.Fatalf("synergy profile with no daemon exited 0:\n%s", run.stderr)
	}
	for _, want := range []string{"--runner=docker", "cannot reach the Docker daemon", sock, "is it running?"} {
		if !strings.Contains(run.stderr, want) {
			t.Errorf("error does not say %q:\n%s", want, run.stderr)
		}
	}
	if _, err := os.Stat(run.out); err == nil {
		t.Errorf("a profile was written at %s", run.out)
	}
}

// TestDockerE2E_ScriptFails: a job that exits non-zero inside its container
// is recorded as a crashed point with its exit code and last output line,
// and its container is removed.
func TestDockerE2E_ScriptFails(t *testing.T) {
	synthtrain := buildSynthtrain(t)
	image := synthtrainImage(t, synthtrain)
	job := e2eJobName(t)
	t.Cleanup(func() { assertNoProfileContainers(t, job) })
	data := genDataset(t, synthtrain, "language", "1MiB")
	// synthtrain exits 2 on a bad command line (an unknown preset), before
	// its first iteration: every launch would fail alike, so synergy stops
	// after the first and exits 1 saying so, with the profile saved.
	run := runProfileCmd(t, nil, "--runner", "docker", "--docker-img", image, "--cpus", "1", "--mem-limits", "64MiB",
		"--data", data, "--point-timeout", "30s", "--job-name", job, "--", "synthtrain", "--preset", "no-such-preset")
	if run.exitCode != 1 || !strings.Contains(run.stderr, "stops after this one launch") {
		t.Fatalf("synergy profile exited %d, want 1 saying it stops after one launch:\n%s", run.exitCode, run.stderr)
	}
	run.exitCode = 0 // the profile is there to read
	p := run.load(t)
	c := p.Cell(1, 0)
	if c == nil || !c.Measured {
		t.Fatalf("no measured cell at cpus=1 mem=unlimited:\n%s", run.stderr)
	}
	if c.Failure == nil {
		t.Fatalf("cell has no failure: %+v\n%s", c, run.stderr)
	}
	if c.Failure.Class != sensitivity.FailCrashed || c.Failure.ExitCode != 2 {
		t.Errorf("failure = %s exit %d, want %s exit 2: %s", c.Failure.Class, c.Failure.ExitCode, sensitivity.FailCrashed, c.Failure.Message)
	}
	if !strings.Contains(c.Failure.Message, "no-such-preset") {
		t.Errorf("failure message does not carry the job's last output line: %q", c.Failure.Message)
	}
	if !strings.Contains(run.stderr, "FAILED (crashed)") {
		t.Errorf("synergy did not report the failed point:\n%s", run.stderr)
	}
	if p.Job.Runner != "docker" {
		t.Errorf("profile job runner = %q, want docker", p.Job.Runner)
	}
}
