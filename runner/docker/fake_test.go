package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
)

// fakeDocker is a scripted Engine: each call is recorded, and the errors,
// exit state, logs and stats it returns are set by the test.
type fakeDocker struct {
	createErr, startErr, logsErr, killErr, removeErr, waitErr error
	finalState                                                container.State
	pid                                                       int
	logs                                                      []byte
	stats                                                     string
	// exited, if set, holds the wait result back until it is closed; a
	// successful kill closes it.
	exited chan struct{}

	// listed is what ContainerList returns; files what CopyFromContainer
	// finds (path -> content).
	listed    []container.Summary
	files     map[string]string
	imageUser string // the image's USER

	mu         sync.Mutex
	calls      []string
	removed    []client.ContainerRemoveOptions
	removedIDs []string
	running    bool
}

var _ dockerAPI = (*fakeDocker)(nil)

const fakeID = "f00dfeedcafe0123456789"

func (f *fakeDocker) record(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeDocker) called(c string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, x := range f.calls {
		if x == c {
			n++
		}
	}
	return n
}

func (f *fakeDocker) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	f.record("list")
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.ContainerListResult{Items: f.listed}, nil
}

func (f *fakeDocker) CopyFromContainer(_ context.Context, _ string, o client.CopyFromContainerOptions) (client.CopyFromContainerResult, error) {
	f.record("copy " + o.SourcePath)
	body, ok := f.files[o.SourcePath]
	if !ok {
		return client.CopyFromContainerResult{}, cerrdefs.ErrNotFound
	}
	return client.CopyFromContainerResult{Content: io.NopCloser(bytes.NewReader(tarOf(filepath.Base(o.SourcePath), body)))}, nil
}

func (f *fakeDocker) ContainerCreate(context.Context, client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	f.record("create")
	if f.createErr != nil {
		return client.ContainerCreateResult{}, f.createErr
	}
	return client.ContainerCreateResult{ID: fakeID}, nil
}

func (f *fakeDocker) ContainerStart(context.Context, string, client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.record("start")
	if f.startErr == nil {
		f.mu.Lock()
		f.running = true
		f.mu.Unlock()
	}
	return client.ContainerStartResult{}, f.startErr
}

func (f *fakeDocker) ContainerWait(ctx context.Context, _ string, _ client.ContainerWaitOptions) client.ContainerWaitResult {
	f.record("wait")
	res, errc := make(chan container.WaitResponse, 1), make(chan error, 1)
	go func() {
		if f.exited != nil {
			<-f.exited
		}
		f.mu.Lock()
		f.running = false
		f.mu.Unlock()
		if f.waitErr != nil {
			errc <- f.waitErr
			return
		}
		res <- container.WaitResponse{StatusCode: int64(f.finalState.ExitCode)}
	}()
	return client.ContainerWaitResult{Result: res, Error: errc}
}

func (f *fakeDocker) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.record("inspect")
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.finalState
	if f.running {
		st = container.State{Status: container.StateRunning, Running: true, Pid: f.pid}
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{ID: fakeID, State: &st}}, nil
}

func (f *fakeDocker) ContainerKill(_ context.Context, _ string, o client.ContainerKillOptions) (client.ContainerKillResult, error) {
	f.record("kill:" + o.Signal)
	if f.killErr != nil {
		return client.ContainerKillResult{}, f.killErr
	}
	f.mu.Lock()
	f.finalState.ExitCode = 137
	f.mu.Unlock()
	if f.exited != nil {
		close(f.exited)
	}
	return client.ContainerKillResult{}, nil
}

func (f *fakeDocker) ContainerRemove(_ context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	f.record("remove")
	f.mu.Lock()
	f.removed = append(f.removed, o)
	f.removedIDs = append(f.removedIDs, id)
	f.mu.Unlock()
	return client.ContainerRemoveResult{}, f.removeErr
}

func (f *fakeDocker) ContainerLogs(context.Context, string, client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	f.record("logs")
	if f.logsErr != nil {
		return nil, f.logsErr
	}
	return io.NopCloser(bytes.NewReader(f.logs)), nil
}

func (f *fakeDocker) ContainerStats(context.Context, string, client.ContainerStatsOptions) (client.ContainerStatsResult, error) {
	f.record("stats")
	return client.ContainerStatsResult{Body: io.NopCloser(strings.NewReader(f.stats))}, nil
}

func fakeRunner(t *testing.T, f *fakeDocker, edit func(*Options)) *Runner {
	t.Helper()
	o := Options{Image: "img"}
	if edit != nil {
		edit(&o)
	}
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newRunner(f, fakeImages{user: f.imageUser}, o)
}

// fakeImages answers ImageInspect with an image whose USER is user.
type fakeImages struct{ user string }

func (i fakeImages) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	var res client.ImageInspectResult
	res.Config = &dockerspec.DockerOCIImageConfig{}
	res.Config.User = i.user
	return res, nil
}

func (fakeImages) ImageBuild(context.Context, io.Reader, client.ImageBuildOptions) (client.ImageBuildResult, error) {
	return client.ImageBuildResult{}, errors.New("fake: no builds")
}

func (fakeImages) ImageRemove(context.Context, string, client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	return client.ImageRemoveResult{}, nil
}

func fakeJob() runner.Job {
	return runner.Job{Name: "fake", Argv: []string{"/probe"}}
}

// assertRemoved checks the container was removed exactly once, forcibly and
// with its volumes.
func assertRemoved(t *testing.T, f *fakeDocker) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.removed) != 1 || !f.removed[0].Force || !f.removed[0].RemoveVolumes {
		t.Errorf("removals %+v, want one forced removal with volumes (calls %v)", f.removed, f.calls)
	}
}

func TestStart_CreateFails(t *testing.T) {
	for _, tt := range []struct {
		name    string
		err     error
		wantErr string
	}{
		{"engine error", errors.New("boom"), `job "fake" (cpus=all mem=unlimited): create container: boom`},
		{"image missing", cerrdefs.ErrNotFound.WithMessage("No such image: img"), "image img not found locally: build or load it; synergy never pulls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDocker{createErr: tt.err}
			_, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if f.called("start") != 0 || f.called("remove") != 0 {
				t.Errorf("calls %v after a failed create", f.calls)
			}
		})
	}
}

func TestStart_FailureAfterCreateRemovesContainer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		f       *fakeDocker
		wantErr string
	}{
		{"start fails", &fakeDocker{startErr: errors.New("no cpuset 7")}, "start: no cpuset 7"},
		{"logs fail", &fakeDocker{logsErr: errors.New("log driver none")}, "attach logs: log driver none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := fakeJob()
			job.Stdout = io.Discard
			_, err := fakeRunner(t, tt.f, nil).Start(context.Background(), job)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			assertRemoved(t, tt.f)
		})
	}
}

func TestWait_ErrorStillRemoves(t *testing.T) {
	f := &fakeDocker{waitErr: errors.New("connection reset")}
	h, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Wait()
	if err == nil || !strings.Contains(err.Error(), "wait: connection reset") {
		t.Errorf("Wait err = %v", err)
	}
	assertRemoved(t, f)
}

func TestWait_Results(t *testing.T) {
	tests := []struct {
		name  string
		state container.State
		want  runner.Result
	}{
		{
			// 12:00:00.5 -> 12:00:03 = 2.5s by the engine's clock.
			name:  "clean exit",
			state: container.State{ExitCode: 0, StartedAt: "2025-01-01T12:00:00.5Z", FinishedAt: "2025-01-01T12:00:03Z"},
			want:  runner.Result{ExitCode: 0, WallSeconds: 2.5},
		},
		{
			name:  "non-zero exit is a result, not an error",
			state: container.State{ExitCode: 3, StartedAt: "2025-01-01T12:00:00Z", FinishedAt: "2025-01-01T12:00:01Z"},
			want:  runner.Result{ExitCode: 3, WallSeconds: 1},
		},
		{
			name:  "OOM kill from inspect",
			state: container.State{ExitCode: 137, OOMKilled: true, StartedAt: "2025-01-01T12:00:00Z", FinishedAt: "2025-01-01T12:00:01Z"},
			want:  runner.Result{ExitCode: -1, Signal: "killed", OOMKilled: true, WallSeconds: 1, Final: runner.Stats{OOMEvents: 1, Has: runner.StatOOMEvents}},
		},
		{
			// a worker was OOM-killed, the main process carried on.
			name:  "OOM in a child, clean exit",
			state: container.State{ExitCode: 0, OOMKilled: true, StartedAt: "2025-01-01T12:00:00Z", FinishedAt: "2025-01-01T12:00:01Z"},
			want:  runner.Result{ExitCode: 0, OOMKilled: true, WallSeconds: 1, Final: runner.Stats{OOMEvents: 1, Has: runner.StatOOMEvents}},
		},
		{
			// 137 not caused by us or the OOM killer: reported as is.
			name:  "exit 137 of its own",
			state: container.State{ExitCode: 137, StartedAt: "2025-01-01T12:00:00Z", FinishedAt: "2025-01-01T12:00:01Z"},
			want:  runner.Result{ExitCode: 137, WallSeconds: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDocker{finalState: tt.state}
			h, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			assertRemoved(t, f)
		})
	}
}

// frame wraps p in the engine's 8-byte multiplexing header.
func frame(stream byte, p string) []byte {
	h := make([]byte, 8)
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(p)))
	return append(h, p...)
}

func TestStart_LogsDemultiplexed(t *testing.T) {
	logs := append(append(frame(1, "out 1\n"), frame(2, "err 1\n")...), frame(1, "out 2\n")...)
	f := &fakeDocker{logs: logs}
	var stdout, stderr bytes.Buffer
	job := fakeJob()
	job.Stdout, job.Stderr = &stdout, &stderr
	h, err := fakeRunner(t, f, nil).Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "out 1\nout 2\n" || stderr.String() != "err 1\n" {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
}

func TestStop_KillsAndReportsStopped(t *testing.T) {
	f := &fakeDocker{exited: make(chan struct{})}
	h, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.ExitCode != -1 || res.Signal != "killed" {
		t.Errorf("result %+v, want stopped and killed", res)
	}
	if f.called("kill:KILL") != 1 {
		t.Errorf("calls %v, want one SIGKILL", f.calls)
	}
	assertRemoved(t, f)
	if err := h.Stop(); err != nil || f.called("kill:KILL") != 1 {
		t.Errorf("Stop after the end: %v (calls %v)", err, f.calls)
	}
}

func TestStop_AlreadyExitedIsNotAnError(t *testing.T) {
	f := &fakeDocker{killErr: cerrdefs.ErrConflict.WithMessage("container is not running"), finalState: container.State{ExitCode: 0}}
	h, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("Stop on an exited container: %v", err)
	}
	res, err := h.Wait()
	if err != nil || res.Stopped || res.ExitCode != 0 {
		t.Errorf("result %+v, %v: want a clean exit, not stopped", res, err)
	}
}

func TestContextCancel_KillsAndRemoves(t *testing.T) {
	f := &fakeDocker{exited: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := fakeRunner(t, f, nil).Start(ctx, fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := h.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait err = %v, want context.Canceled", err)
	}
	if !res.Stopped || f.called("kill:KILL") != 1 {
		t.Errorf("result %+v calls %v: want killed and stopped", res, f.calls)
	}
	assertRemoved(t, f)
}

func TestStats_APIFallbackWithoutPID(t *testing.T) {
	f := &fakeDocker{exited: make(chan struct{}), stats: `{"cpu_stats":{"cpu_usage":{"total_usage":2000000000}},"memory_stats":{"usage":4096,"max_usage":8192,"stats":{"total_cache":1024,"total_rss":2048}}}`}
	h, err := fakeRunner(t, f, nil).Start(context.Background(), fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Stop(); _, _ = h.Wait() }()
	if p := h.CgroupPaths(); len(p) != 0 {
		t.Errorf("CgroupPaths() = %v without a PID", p)
	}
	s, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUsageSeconds != 2 || s.MemUsageBytes != 4096 || s.MemPeakBytes != 8192 || s.MemCacheBytes != 1024 || s.MemAnonBytes != 2048 {
		t.Errorf("Stats() = %+v", s)
	}
}

func TestStats_FromCgroupFilesOfThePID(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	writeFiles(t, proc, map[string]string{
		"4242/cgroup": "4:memory:/docker/" + fakeID + "\n2:cpuacct:/docker/" + fakeID + "\n0::/\n",
		"self/mountinfo": "30 20 0:30 / " + cg + "/memory rw - cgroup cgroup rw,memory\n" +
			"31 20 0:31 / " + cg + "/cpuacct rw - cgroup cgroup rw,cpuacct\n",
	})
	mem, acct := filepath.Join(cg, "memory/docker", fakeID), filepath.Join(cg, "cpuacct/docker", fakeID)
	writeFiles(t, mem, map[string]string{
		"memory.usage_in_bytes": "300\n", "memory.max_usage_in_bytes": "500\n",
		"memory.stat": "total_cache 100\ntotal_rss 200\n", "memory.oom_control": "oom_kill 0\n",
	})
	writeFiles(t, acct, map[string]string{"cpuacct.usage": "1500000000\n"})

	f := &fakeDocker{pid: 4242, exited: make(chan struct{})}
	r := fakeRunner(t, f, func(o *Options) { o.ProcRoot = proc })
	h, err := r.Start(context.Background(), fakeJob())
	if err != nil {
		t.Fatal(err)
	}
	if p := h.CgroupPaths(); p["memory"] != mem || p["cpuacct"] != acct {
		t.Errorf("CgroupPaths() = %v", p)
	}
	s, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemUsageBytes != 300 || s.MemPeakBytes != 500 || s.CPUUsageSeconds != 1.5 || f.called("stats") != 0 {
		t.Errorf("Stats() = %+v (calls %v): want the cgroup files, not the API", s, f.calls)
	}
	// Stop samples before killing: Final holds the last counters even
	// though the cgroup then disappears.
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(mem); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Final.MemPeakBytes != 500 || res.Final.CPUUsageSeconds != 1.5 {
		t.Errorf("Final = %+v", res.Final)
	}
	if s, err := h.Stats(); err != nil || s != res.Final {
		t.Errorf("Stats() after the end = %+v, %v; want Final", s, err)
	}
}

func TestStart_BadJobNeverReachesTheEngine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFiles(t, dir, map[string]string{"file": "x"})
	for _, tt := range []struct {
		name    string
		edit    func(*runner.Job)
		wantErr string
	}{
		{"missing data dir", func(j *runner.Job) { j.DataDir = filepath.Join(dir, "nope") }, "DataDir"},
		{"data dir is a file", func(j *runner.Job) { j.DataDir = file }, "not a directory"},
		{"metrics file outside metrics dir", func(j *runner.Job) {
			j.MetricsDir = dir
			j.Env = []string{jobcontract.EnvMetricsFile + "=/elsewhere/m.jsonl"}
		}, "not inside Job.MetricsDir"},
		{"empty argv", func(j *runner.Job) { j.Argv = nil }, "empty Argv"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDocker{}
			job := fakeJob()
			tt.edit(&job)
			_, err := fakeRunner(t, f, nil).Start(context.Background(), job)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if len(f.calls) != 0 {
				t.Errorf("engine called: %v", f.calls)
			}
		})
	}
	f := &fakeDocker{}
	if _, err := fakeRunner(t, f, func(o *Options) { o.Image = "" }).Start(context.Background(), fakeJob()); err == nil || !strings.Contains(err.Error(), "no image given") {
		t.Errorf("no image: err = %v", err)
	}
}

// tarOf is a tar stream of one file, as CopyFromContainer returns it.
func tarOf(name, body string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	return buf.Bytes()
}
