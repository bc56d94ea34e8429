package docker

// Tests against the real Docker Engine on this machine. They skip (or fail,
// under SYNERGY_REQUIRE=docker) when the daemon cannot be reached. The probe
// image is built once per test binary and removed by TestMain; TestMain also
// fails the run if any container labelled with this run's id survives.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// engineState is the per-test-binary engine fixture.
type engineState struct {
	once     sync.Once
	runID    string
	image    string // built probe image tag; "" if not built
	skipWhy  string // why the engine is unusable
	buildErr error
}

var engine = engineState{runID: fmt.Sprintf("%d", os.Getpid())}

func TestMain(m *testing.M) {
	code := m.Run()
	if engine.skipWhy == "" {
		if c, err := client.New(client.FromEnv); err == nil {
			ctx := context.Background()
			if engine.image != "" {
				if _, err := c.ImageRemove(ctx, engine.image, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
					fmt.Fprintf(os.Stderr, "remove test image %s: %v\n", engine.image, err)
					code = 1
				}
			}
			if left, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "synergy.test="+engine.runID)}); err == nil && len(left.Items) > 0 {
				for _, l := range left.Items {
					fmt.Fprintf(os.Stderr, "container left behind: %s %v\n", l.ID, l.Labels)
					_, _ = c.ContainerRemove(ctx, l.ID, client.ContainerRemoveOptions{Force: true})
				}
				code = 1
			}
			c.Close()
		}
	}
	os.Exit(code)
}

// realRunner connects to the engine and makes sure the probe image exists,
// skipping the test when there is no engine.
func realRunner(t testing.TB, o Options) *Runner {
	t.Helper()
	engine.once.Do(func() {
		r, err := New(Options{})
		if err != nil {
			engine.skipWhy = err.Error()
			return
		}
		defer r.Close()
		dir, err := os.MkdirTemp("", "synergy-probe-")
		if err != nil {
			engine.buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "probe")
		cmd := exec.Command("go", "build", "-o", bin, "./testdata/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			engine.buildErr = fmt.Errorf("build probe: %v\n%s", err, out)
			return
		}
		tag := "synergy-test-probe:" + engine.runID
		if _, err := r.BuildScratchImage(context.Background(), tag, map[string]string{"/probe": bin}, nil); err != nil {
			engine.buildErr = err
			return
		}
		engine.image = tag
	})
	if engine.skipWhy != "" {
		testreq.Skip(t, "docker", engine.skipWhy)
	}
	if engine.buildErr != nil {
		t.Fatal(engine.buildErr)
	}
	if o.Image == "" {
		o.Image = engine.image
	}
	o.Labels = map[string]string{"synergy.test": engine.runID}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func realRunnerB(b *testing.B) *Runner { return realRunner(b, Options{}) }

// probeJob is a job running the probe with a dataset holding hello.txt and
// a metrics directory.
func probeJob(t *testing.T, name string, limits runner.Limits, args ...string) (runner.Job, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	data, metrics := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	return runner.Job{
		Name:       name,
		Argv:       append([]string{"/probe", "--data", data}, args...),
		Env:        []string{jobcontract.EnvMetricsFile + "=" + filepath.Join(metrics, "metrics.jsonl"), jobcontract.EnvPoint + "=" + limits.String()},
		Stdout:     &stdout,
		Stderr:     &stderr,
		Limits:     limits,
		DataDir:    data,
		MetricsDir: metrics,
	}, &stdout, &stderr
}

// assertGone checks the container no longer exists.
func assertGone(t *testing.T, h runner.Handle) {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := h.(*handle).ID()
	if _, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %.12s still exists after Wait (inspect err=%v)", id, err)
	}
}

func TestEngine_NegotiatesAPIVersion(t *testing.T) {
	r := realRunner(t, Options{})
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping, err := c.Ping(context.Background(), client.PingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := client.MaxAPIVersion
	if versions.LessThan(ping.APIVersion, want) {
		want = ping.APIVersion
	}
	if r.APIVersion() != want {
		t.Errorf("APIVersion() = %q, want %q (daemon %s, client max %s)", r.APIVersion(), want, ping.APIVersion, client.MaxAPIVersion)
	}
	t.Logf("daemon %s speaks API %s; negotiated %s", r.Host(), ping.APIVersion, r.APIVersion())
}

func TestEngine_LimitsMountsAndMetrics(t *testing.T) {
	r := realRunner(t, Options{})
	tests := []struct {
		name   string
		limits runner.Limits
		want   []string // lines the probe must print
	}{
		// 1 cpu -> cpuset "0", quota 1 × 100000us; mem 64MiB = 67108864, no
		// swap (memsw = mem); shm = min(1GiB, 64MiB/2) = 33554432.
		{"one-cpu-64MiB", runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20},
			[]string{"cpus=0", "quota=100000", "memlimit=67108864", "swaplimit=67108864", "shm=33554432"}},
		// 0.5 cpu -> ceil = 1 core, quota 50000us; 256MiB -> shm 128MiB.
		{"half-cpu-256MiB", runner.Limits{CPUs: 0.5, MemLimitBytes: 256 << 20},
			[]string{"cpus=0", "quota=50000", "memlimit=268435456", "shm=134217728"}},
		// 1.5 cpus -> ceil = 2 cores "0-1", quota 1.5 × 100000 = 150000us.
		{"one-and-a-half-cpu", runner.Limits{CPUs: 1.5, MemLimitBytes: 128 << 20},
			[]string{"cpus=0-1", "quota=150000", "memlimit=134217728"}},
		// no cpu limit: quota -1, shm 1GiB.
		{"no-cpu-limit", runner.Limits{MemLimitBytes: 4 << 30},
			[]string{"quota=-1", "memlimit=4294967296", "shm=1073741824"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if need := int(math.Ceil(tt.limits.CPUs)); need > runtime.NumCPU() {
				t.Skipf("needs %d cpus, this host has %d", need, runtime.NumCPU())
			}
			job, stdout, stderr := probeJob(t, "limits-"+tt.name, tt.limits)
			h, err := r.Start(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.Wait()
			if err != nil {
				t.Fatalf("Wait: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			if res.ExitCode != 0 || res.OOMKilled || res.Stopped {
				t.Fatalf("result %+v, want a clean exit\nstdout:\n%s\nstderr:\n%s", res, stdout, stderr)
			}
			lines := strings.Split(stdout.String(), "\n")
			for _, w := range append(tt.want,
				"data=hello from the host",
				"data_readonly=true",
				"metrics="+DefaultMetricsMnt+"/metrics.jsonl",
				"point="+tt.limits.String(),
				"args=--data "+DefaultContainerMnt) {
				if !contains(lines, w) {
					t.Errorf("probe did not print %q; stdout:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stderr.String(), "probe: stderr line") || strings.Contains(stdout.String(), "stderr line") {
				t.Errorf("stderr not demultiplexed: stdout=%q stderr=%q", stdout, stderr)
			}
			b, err := os.ReadFile(filepath.Join(job.MetricsDir, "metrics.jsonl"))
			if err != nil || !strings.HasPrefix(string(b), `{"iter":0,`) {
				t.Errorf("metrics file on the host: %q, %v", b, err)
			}
			if res.WallSeconds <= 0 {
				t.Errorf("WallSeconds = %g, want > 0", res.WallSeconds)
			}
			assertGone(t, h)
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestEngine_ReadBPSOnDatasetDisk(t *testing.T) {
	r := realRunner(t, Options{})
	job, stdout, _ := probeJob(t, "readbps", runner.Limits{ReadBPS: 10_000_000})
	dev, err := cgroupfs.DiskNameOf(job.DataDir, "/sys")
	if err != nil {
		testreq.Skip(t, "blkio", err.Error())
	}
	var st struct{ maj, min uint32 }
	if _, err := fmt.Sscanf(strings.TrimSpace(readFile(t, "/sys/class/block/"+filepath.Base(dev)+"/dev")), "%d:%d", &st.maj, &st.min); err != nil {
		t.Fatal(err)
	}
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait: %+v, %v", res, err)
	}
	want := fmt.Sprintf("readbps=%d:%d 10000000", st.maj, st.min)
	if !contains(strings.Split(stdout.String(), "\n"), want) {
		t.Errorf("want %q inside the container; stdout:\n%s", want, stdout)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEngine_OOMKilled(t *testing.T) {
	r := realRunner(t, Options{})
	job, stdout, stderr := probeJob(t, "oom", runner.Limits{MemLimitBytes: 32 << 20}, "--alloc-mib", "256")
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.OOMKilled || res.ExitCode != -1 || res.Signal != "killed" || res.Final.OOMEvents < 1 {
		t.Errorf("result %+v, want OOM-killed (exit -1, signal killed, OOMEvents >= 1)\nstdout:\n%s\nstderr:\n%s", res, stdout, stderr)
	}
	if strings.Contains(stdout.String(), "allocated=") {
		t.Errorf("the probe allocated 256MiB under a 32MiB limit:\n%s", stdout)
	}
	assertGone(t, h)
}

func TestEngine_NonZeroExit(t *testing.T) {
	r := realRunner(t, Options{})
	job, _, _ := probeJob(t, "exit3", runner.Limits{}, "--exit", "3")
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatalf("a non-zero exit is a normal result, got error %v", err)
	}
	if res.ExitCode != 3 || res.OOMKilled || res.Stopped || res.Signal != "" {
		t.Errorf("result %+v, want exit 3", res)
	}
	assertGone(t, h)
}

func TestEngine_MissingImage(t *testing.T) {
	r := realRunner(t, Options{Image: "synergy-no-such-image:never"})
	job, _, _ := probeJob(t, "missing", runner.Limits{})
	_, err := r.Start(context.Background(), job)
	want := "image synergy-no-such-image:never not found locally: build or load it; synergy never pulls"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Start error = %v, want it to contain %q", err, want)
	}
	if err := r.CheckImage(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckImage error = %v, want it to contain %q", err, want)
	}
}

func TestEngine_StopKillsAndRemoves(t *testing.T) {
	r := realRunner(t, Options{})
	job, stdout, _ := probeJob(t, "stop", runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}, "--sleep")
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	mem := paths["memory"]
	if mem == "" {
		mem = paths[cgroupfs.KeyUnified]
	}
	if mem == "" || !strings.Contains(mem, h.(*handle).ID()) {
		t.Errorf("CgroupPaths() = %v, want the container's cgroup", paths)
	}
	if _, err := os.Stat(mem); err != nil {
		t.Errorf("cgroup dir: %v", err)
	}
	s, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemUsageBytes <= 0 || s.Time.IsZero() {
		t.Errorf("Stats() = %+v, want memory in use", s)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.ExitCode != -1 || res.Signal != "killed" {
		t.Errorf("result %+v, want stopped (exit -1, killed)\nstdout:\n%s", res, stdout)
	}
	// Final was sampled just before the kill.
	if res.Final.MemUsageBytes <= 0 || res.Final.CPUUsageSeconds <= 0 {
		t.Errorf("Final = %+v, want the counters read before the kill", res.Final)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("Stop after the end: %v", err)
	}
	if _, err := os.Stat(mem); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s still there after Wait: %v", mem, err)
	}
	assertGone(t, h)
}

func TestEngine_ContextCancelKillsAndRemoves(t *testing.T) {
	r := realRunner(t, Options{})
	job, _, _ := probeJob(t, "cancel", runner.Limits{}, "--sleep")
	ctx, cancel := context.WithCancel(context.Background())
	h, err := r.Start(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := h.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait error = %v, want context.Canceled", err)
	}
	if !res.Stopped || res.ExitCode != -1 {
		t.Errorf("result %+v, want stopped", res)
	}
	assertGone(t, h)
}

func TestNew_DaemonDown(t *testing.T) {
	_, err := New(Options{Host: "unix:///nonexistent/docker.sock"})
	want := "cannot reach the Docker daemon at unix:///nonexistent/docker.sock: is it running?"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New error = %v, want it to contain %q", err, want)
	}
}

// TestEngine_Synthtrain puts the real reference job (cmd/synthtrain, built
// static) into a scratch image and runs one profiling point through the
// runner, passing host paths the way the profiler does.
func TestEngine_Synthtrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/synthtrain")
	}
	r := realRunner(t, Options{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "synthtrain")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/synergy-sched/synergy/cmd/synthtrain")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build synthtrain: %v\n%s", err, out)
	}
	data, metrics := filepath.Join(dir, "data"), filepath.Join(dir, "metrics")
	if out, err := exec.Command(bin, "gen", "--dir", data, "--bytes", "2MiB").CombinedOutput(); err != nil {
		t.Fatalf("synthtrain gen: %v\n%s", err, out)
	}
	if err := os.Mkdir(metrics, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := "synergy-test-synthtrain:" + engine.runID
	ctx := context.Background()
	if _, err := r.BuildScratchImage(ctx, tag, map[string]string{"/usr/local/bin/synthtrain": bin}, []string{"synthtrain"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.RemoveImage(context.Background(), tag); err != nil {
			t.Error(err)
		}
	})
	rt := realRunner(t, Options{Image: tag})
	limits := runner.Limits{CPUs: 1, MemLimitBytes: 256 << 20}
	var stdout, stderr bytes.Buffer
	h, err := rt.Start(ctx, runner.Job{
		Name:       "synthtrain",
		Argv:       []string{"synthtrain", "-b", "4", "--gpu-step", "1ms", "--max-iterations", "6", "--data", data},
		Env:        []string{jobcontract.EnvMetricsFile + "=" + filepath.Join(metrics, "metrics.jsonl"), jobcontract.EnvPoint + "=" + limits.String()},
		Stdout:     &stdout,
		Stderr:     &stderr,
		Limits:     limits,
		DataDir:    data,
		MetricsDir: metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v\nstdout:\n%s\nstderr:\n%s", res, err, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(metrics, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 6 {
		t.Errorf("%d metrics lines on the host, want 6 (one per iteration):\n%s", n, b)
	}
	assertGone(t, h)
}
