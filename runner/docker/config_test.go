package docker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
)

func testOptions() Options {
	o, err := Options{Image: "img"}.withDefaults()
	if err != nil {
		panic(err)
	}
	return o
}

func TestHostConfig_Limits(t *testing.T) {
	online := []int{0, 1, 2, 3, 4, 5, 6, 7}
	const gib = int64(1) << 30
	tests := []struct {
		name   string
		limits runner.Limits
		opts   func(*Options)
		dev    string
		check  func(t *testing.T, hc *container.HostConfig)
	}{
		{
			name:   "no limits: no cpuset, no quota, no memory limit, shm 1GiB",
			limits: runner.Limits{},
			check: func(t *testing.T, hc *container.HostConfig) {
				want := container.Resources{}
				if !reflect.DeepEqual(hc.Resources, want) {
					t.Errorf("Resources = %+v, want none", hc.Resources)
				}
				eq(t, "ShmSize", hc.ShmSize, gib)
			},
		},
		{
			// ceil(2.5) = 3 cores: "0-2"; quota 2.5 × 100000 = 250000us.
			name:   "fractional cpus",
			limits: runner.Limits{CPUs: 2.5},
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "CpusetCpus", hc.CpusetCpus, "0-2")
				eq(t, "CPUPeriod", hc.CPUPeriod, int64(100000))
				eq(t, "CPUQuota", hc.CPUQuota, int64(250000))
			},
		},
		{
			// an explicit cpuset wins over the first ceil(cpus) cores.
			name:   "explicit cpuset",
			limits: runner.Limits{CPUs: 2, CPUSet: []int{4, 6}},
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "CpusetCpus", hc.CpusetCpus, "4,6")
				eq(t, "CPUQuota", hc.CPUQuota, int64(200000))
			},
		},
		{
			// 4GiB limit: MemorySwap = Memory (no swap); shm = min(1GiB, 2GiB).
			name:   "memory limit, no swap",
			limits: runner.Limits{MemLimitBytes: 4 * gib},
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "Memory", hc.Memory, 4*gib)
				eq(t, "MemorySwap", hc.MemorySwap, 4*gib)
				eq(t, "ShmSize", hc.ShmSize, gib)
			},
		},
		{
			// 512MiB limit: shm = 512MiB / 2 = 256MiB.
			name:   "small memory limit halves shm",
			limits: runner.Limits{MemLimitBytes: 512 << 20},
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "ShmSize", hc.ShmSize, int64(256<<20))
			},
		},
		{
			name:   "explicit shm size",
			limits: runner.Limits{MemLimitBytes: 512 << 20},
			opts:   func(o *Options) { o.ShmSizeBytes = 8 << 30 },
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "ShmSize", hc.ShmSize, int64(8<<30))
			},
		},
		{
			name:   "read throttle on the dataset's disk",
			limits: runner.Limits{ReadBPS: 50_000_000, ReadBPSPath: "/data"},
			dev:    "/dev/vda",
			check: func(t *testing.T, hc *container.HostConfig) {
				want := []*blkiodev.ThrottleDevice{{Path: "/dev/vda", Rate: 50_000_000}}
				if !reflect.DeepEqual(hc.BlkioDeviceReadBps, want) {
					t.Errorf("BlkioDeviceReadBps = %v, want %v", hc.BlkioDeviceReadBps, want)
				}
			},
		},
		{
			name:   "gpus through a device request",
			limits: runner.Limits{},
			opts:   func(o *Options) { o.GPUs = 2 },
			check: func(t *testing.T, hc *container.HostConfig) {
				want := []container.DeviceRequest{{Count: 2, Capabilities: [][]string{{"gpu"}}}}
				if !reflect.DeepEqual(hc.DeviceRequests, want) {
					t.Errorf("DeviceRequests = %+v, want %+v", hc.DeviceRequests, want)
				}
			},
		},
		{
			name:   "all gpus",
			limits: runner.Limits{},
			opts:   func(o *Options) { o.GPUs = -1 },
			check: func(t *testing.T, hc *container.HostConfig) {
				eq(t, "DeviceRequests[0].Count", hc.DeviceRequests[0].Count, -1)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			if tt.opts != nil {
				tt.opts(&o)
			}
			job := runner.Job{Name: "j", Argv: []string{"x"}, Limits: tt.limits, DataDir: "/data/ds/", MetricsDir: "/tmp/m"}
			hc, err := hostConfig(job, o, online, tt.dev)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, hc)
			// Invariants of every point: the two mounts, nothing privileged.
			wantMounts := []mount.Mount{
				{Type: mount.TypeBind, Source: "/data/ds", Target: "/datadrive", ReadOnly: true},
				{Type: mount.TypeBind, Source: "/tmp/m", Target: "/synergy"},
			}
			if !reflect.DeepEqual(hc.Mounts, wantMounts) {
				t.Errorf("Mounts = %+v, want %+v", hc.Mounts, wantMounts)
			}
			if hc.Privileged || hc.NetworkMode.IsHost() || hc.IpcMode.IsHost() || hc.PidMode.IsHost() || len(hc.Binds) > 0 {
				t.Errorf("host config grants host access: %+v", hc)
			}
		})
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestHostConfig_BadInput(t *testing.T) {
	online := []int{0, 1}
	tests := []struct {
		name    string
		job     runner.Job
		dev     string
		wantErr string
	}{
		{"more cpus than online", runner.Job{Limits: runner.Limits{CPUs: 3}}, "", "cpus=3 needs 3 cores but only 2 are online"},
		{"negative cpus", runner.Job{Limits: runner.Limits{CPUs: -1}}, "", "cpus=-1 is negative"},
		{"quota below 1ms", runner.Job{Limits: runner.Limits{CPUs: 0.005}}, "", "below the kernel's 1000us minimum"},
		{"memory below docker's minimum", runner.Job{Limits: runner.Limits{MemLimitBytes: 1 << 20}}, "", "mem=1MiB is below Docker's 6MiB minimum"},
		{"read limit without a device", runner.Job{Limits: runner.Limits{ReadBPS: 1, ReadBPSPath: "/x"}}, "", `no block device found for "/x"`},
		{"relative data dir", runner.Job{DataDir: "data"}, "", `DataDir "data" is not absolute`},
		{"host root as data", runner.Job{DataDir: "/"}, "", "host root"},
		{"relative metrics dir", runner.Job{MetricsDir: "m"}, "", `MetricsDir "m" is not absolute`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostConfig(tt.job, testOptions(), online, tt.dev)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestShmSizeFor(t *testing.T) {
	tests := []struct {
		explicit, mem, want int64
	}{
		{0, 0, 1 << 30},              // unlimited: 1GiB
		{0, 8 << 30, 1 << 30},        // min(1GiB, 4GiB)
		{0, 1 << 30, 512 << 20},      // min(1GiB, 512MiB)
		{0, 64 << 20, 32 << 20},      // min(1GiB, 32MiB)
		{2 << 30, 64 << 20, 2 << 30}, // explicit wins
	}
	for _, tt := range tests {
		if got := shmSizeFor(tt.explicit, tt.mem); got != tt.want {
			t.Errorf("shmSizeFor(%d, %d) = %d, want %d", tt.explicit, tt.mem, got, tt.want)
		}
	}
}

func TestTranslateArgv(t *testing.T) {
	m := newPathMap(pathRule{"/home/u/imagenet/", "/datadrive"}, pathRule{"/tmp/prof/p3", "/synergy"})
	tests := []struct{ in, want []string }{
		{[]string{"python", "train.py", "--data", "/home/u/imagenet"}, []string{"python", "train.py", "--data", "/datadrive"}},
		{[]string{"--data=/home/u/imagenet/train"}, []string{"--data=/datadrive/train"}},
		{[]string{"--out", "/tmp/prof/p3/x.json"}, []string{"--out", "/synergy/x.json"}},
		// a sibling sharing a prefix is not below the data dir
		{[]string{"/home/u/imagenet2", "/home/u/imagenet-old/x"}, []string{"/home/u/imagenet2", "/home/u/imagenet-old/x"}},
		// relative paths and non-flag KEY=VALUE stay
		{[]string{"imagenet", "a=/home/u/imagenet"}, []string{"imagenet", "a=/home/u/imagenet"}},
		{[]string{"/home/u/imagenet/../etc"}, []string{"/home/u/imagenet/../etc"}},
	}
	for _, tt := range tests {
		if got := translateArgv(tt.in, m); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("translateArgv(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTranslateArgv_NestedDirsLongestWins(t *testing.T) {
	m := newPathMap(pathRule{"/w", "/datadrive"}, pathRule{"/w/metrics", "/synergy"})
	got := translateArgv([]string{"/w/a", "/w/metrics/m.jsonl"}, m)
	want := []string{"/datadrive/a", "/synergy/m.jsonl"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTranslateEnv(t *testing.T) {
	m := newPathMap(pathRule{"/data", "/datadrive"}, pathRule{"/tmp/m", "/synergy"})
	got, err := translateEnv([]string{jobcontract.EnvMetricsFile + "=/tmp/m/metrics.jsonl", jobcontract.EnvPoint + "=cpus=2 mem=1GiB", "CACHE=/data/c", "EMPTY="}, m, "/tmp/m")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{jobcontract.EnvMetricsFile + "=/synergy/metrics.jsonl", jobcontract.EnvPoint + "=cpus=2 mem=1GiB", "CACHE=/datadrive/c", "EMPTY="}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	for _, bad := range []struct{ env, wantErr string }{
		{jobcontract.EnvMetricsFile + "=/elsewhere/metrics.jsonl", `not inside Job.MetricsDir "/tmp/m"`},
		{"NOEQUALS", `env[0] "NOEQUALS": not KEY=VALUE`},
	} {
		if _, err := translateEnv([]string{bad.env}, m, "/tmp/m"); err == nil || !strings.Contains(err.Error(), bad.wantErr) {
			t.Errorf("translateEnv(%q) err = %v, want %q", bad.env, err, bad.wantErr)
		}
	}
}

func TestContainerConfig(t *testing.T) {
	job := runner.Job{
		Name:       "resnet18",
		Argv:       []string{"python", "train.py", "--data", "/d", "-b", "32"},
		Env:        []string{jobcontract.EnvMetricsFile + "=/m/metrics.jsonl"},
		Limits:     runner.Limits{CPUs: 2, MemLimitBytes: 1 << 30},
		DataDir:    "/d",
		MetricsDir: "/m",
	}
	o := testOptions()
	o.Labels = map[string]string{"team": "x"}
	cfg, err := containerConfig(job, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "Image", cfg.Image, "img")
	if !reflect.DeepEqual([]string(cfg.Entrypoint), []string{"python"}) || !reflect.DeepEqual([]string(cfg.Cmd), []string{"train.py", "--data", "/datadrive", "-b", "32"}) {
		t.Errorf("Entrypoint %q Cmd %q: want Argv as the whole command with the data dir translated", cfg.Entrypoint, cfg.Cmd)
	}
	if !reflect.DeepEqual(cfg.Env, []string{jobcontract.EnvMetricsFile + "=/synergy/metrics.jsonl"}) {
		t.Errorf("Env = %q", cfg.Env)
	}
	wantLabels := map[string]string{LabelProfile: "1", LabelJob: "resnet18", LabelPoint: "cpus=2 mem=1GiB", "team": "x"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("Labels = %v, want %v", cfg.Labels, wantLabels)
	}

	o.UseImageEntrypoint = true
	cfg, err = containerConfig(job, o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Entrypoint != nil || len(cfg.Cmd) != 6 || cfg.Cmd[0] != "python" {
		t.Errorf("UseImageEntrypoint: Entrypoint %q Cmd %q, want image entrypoint kept and Argv as Cmd", cfg.Entrypoint, cfg.Cmd)
	}

	o.UseImageEntrypoint = false
	cfg, err = containerConfig(runner.Job{Argv: []string{"/probe"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cmd == nil || len(cfg.Cmd) != 0 {
		t.Errorf("single-element Argv: Cmd = %#v, want empty and non-nil (the image's CMD must not be appended)", cfg.Cmd)
	}

	if _, err := containerConfig(runner.Job{Name: "x"}, o); err == nil || !strings.Contains(err.Error(), "empty Argv") {
		t.Errorf("empty Argv: err = %v", err)
	}
}

func TestOptions_Validation(t *testing.T) {
	tests := []struct {
		o       Options
		wantErr string
	}{
		{Options{ContainerMnt: "data"}, `container mount "data": want an absolute path other than /`},
		{Options{ContainerMnt: "/"}, `container mount "/"`},
		{Options{MetricsMnt: "/datadrive/m"}, "overlap"},
		{Options{ContainerMnt: "/synergy"}, "overlap"},
		{Options{GPUs: -2}, "gpus=-2"},
		{Options{ShmSizeBytes: -1}, "shm size -1"},
	}
	for _, tt := range tests {
		if _, err := tt.o.withDefaults(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%+v: err = %v, want %q", tt.o, err, tt.wantErr)
		}
	}
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.ContainerMnt != "/datadrive" || o.MetricsMnt != "/synergy" || o.StatsInterval != DefaultStatsInterval {
		t.Errorf("defaults: %+v", o)
	}
}
