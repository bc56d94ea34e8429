package local

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/synergy-sched/synergy/runner"
)

func TestModeFromMounts_Layouts(t *testing.T) {
	tests := []struct {
		file, root, want string
	}{
		{"mounts-hybrid.txt", "/sys/fs/cgroup", ModeHybrid}, // this machine kind
		{"mounts-v1.txt", "/sys/fs/cgroup", ModeV1},
		{"mounts-v1-comounted.txt", "/sys/fs/cgroup", ModeV1},
		{"mounts-v2.txt", "/sys/fs/cgroup", ModeV2},
		{"mounts-v2.txt", "/sys/fs/cgroup/", ModeV2}, // trailing slash
		{"mounts-none.txt", "/sys/fs/cgroup", ModeNone},
		{"mounts-hybrid.txt", "/elsewhere", ModeNone}, // nothing under that root
	}
	for _, tt := range tests {
		t.Run(tt.file+"@"+tt.root, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := modeFromMounts(f, tt.root)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("mode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDetectMode_FakeProc(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := DetectMode(proc, "/sys/fs/cgroup"); got != ModeNone {
		t.Errorf("no mount table: mode = %q, want none", got)
	}
	b, err := os.ReadFile("testdata/mounts-v2.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "self", "mounts"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := DetectMode(proc, "/sys/fs/cgroup"); got != ModeV2 {
		t.Errorf("mode = %q, want v2", got)
	}
}

func TestParseMounts_EscapedAndBad(t *testing.T) {
	m, err := parseMounts(strings.NewReader(`cgroup /sys/fs/cgroup/my\040dir cgroup rw,memory 0 0` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m[0].Point != "/sys/fs/cgroup/my dir" {
		t.Errorf("point = %q, want the space unescaped", m[0].Point)
	}
	_, err = parseMounts(strings.NewReader("ok / ext4 rw 0 0\nbroken line\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}

func TestParseProcCgroup_Files(t *testing.T) {
	tests := []struct {
		file        string
		wantV1      map[string]string
		wantUnified string
	}{
		{"cgroup-hybrid.txt", map[string]string{
			"name=systemd": "/", "pids": "/", "blkio": "/", "freezer": "/", "devices": "/",
			"memory": "/process_api/ae84b602dc02ac415505559ecb4cca4c", "cpuset": "/", "cpuacct": "/", "cpu": "/",
		}, "/"},
		{"cgroup-v2.txt", map[string]string{}, "/user.slice/user-1000.slice/session-3.scope"},
		{"cgroup-comounted.txt", map[string]string{"cpu": "/docker/abc", "cpuacct": "/docker/abc", "memory": "/docker/abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := parseProcCgroup(f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.V1, tt.wantV1) || got.Unified != tt.wantUnified {
				t.Errorf("got %v unified %q, want %v unified %q", got.V1, got.Unified, tt.wantV1, tt.wantUnified)
			}
		})
	}
}

func TestParseProcCgroup_BadLines(t *testing.T) {
	for _, in := range []string{"4:memory\n", "1:cpu:relative/path\n"} {
		if _, err := parseProcCgroup(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err = %v, want one naming line 1", in, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0-3,6", []int{0, 1, 2, 3, 6}, false},
		{"0\n", []int{0}, false},
		{"", nil, false},
		{"2,0-1,1", []int{0, 1, 2}, false}, // sorted, deduplicated
		{"3-1", nil, true},
		{"a", nil, true},
		{"-1", nil, true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && len(got)+len(tt.want) > 0 && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestPlanFor_Limits(t *testing.T) {
	online := []int{0, 1, 2, 3}
	disk := devNum{254, 0}
	tests := []struct {
		name    string
		limits  runner.Limits
		noSwap  bool
		want    plan
		wantErr string
	}{
		{name: "no limits", want: plan{}},
		{name: "fractional cpus",
			// ceil(1.5) = 2 cores; quota 1.5 × 100000 = 150000us
			limits: runner.Limits{CPUs: 1.5},
			want:   plan{CPUSet: []int{0, 1}, QuotaUS: 150000, PeriodUS: 100000}},
		{name: "explicit cpuset, unsorted",
			limits: runner.Limits{CPUs: 2, CPUSet: []int{3, 2}},
			want:   plan{CPUSet: []int{2, 3}, QuotaUS: 200000, PeriodUS: 100000}},
		{name: "cpuset without budget: no quota",
			limits: runner.Limits{CPUSet: []int{1}},
			want:   plan{CPUSet: []int{1}}},
		{name: "memory with swap accounting",
			limits: runner.Limits{MemLimitBytes: 1 << 30}, noSwap: true,
			want: plan{MemLimitBytes: 1 << 30, NoSwap: true}},
		{name: "read throttle",
			limits: runner.Limits{ReadBPS: 16e6, ReadBPSPath: "/data"},
			want:   plan{ReadBPS: 16e6, ReadDev: disk}},
		{name: "too many cpus", limits: runner.Limits{CPUs: 5}, wantErr: "needs 5 cores but only 4"},
		{name: "negative cpus", limits: runner.Limits{CPUs: -1}, wantErr: "cpus=-1"},
		{name: "cpuset off-line", limits: runner.Limits{CPUSet: []int{7}}, wantErr: "CPU 7"},
		{name: "cpuset too small", limits: runner.Limits{CPUs: 3, CPUSet: []int{0, 1}}, wantErr: "needs 3 cores but cpuset 0-1 has 2"},
		{name: "empty cpuset", limits: runner.Limits{CPUSet: []int{}}, wantErr: "cpuset is empty"},
		{name: "quota below 1ms", limits: runner.Limits{CPUs: 0.005}, wantErr: "below the kernel's minimum"},
		{name: "negative memory", limits: runner.Limits{MemLimitBytes: -1}, wantErr: "memory limit"},
		{name: "read limit without path", limits: runner.Limits{ReadBPS: 1}, wantErr: "without the path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planFor(tt.limits, online, disk, tt.noSwap)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestV1Resources_Plans(t *testing.T) {
	tests := []struct {
		name string
		plan plan
		want *specs.LinuxResources
	}{
		{"nothing", plan{}, &specs.LinuxResources{}},
		{"cpus", plan{CPUSet: []int{0, 1, 3}, QuotaUS: 250000, PeriodUS: 100000},
			&specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0-1,3", Quota: ptr[int64](250000), Period: ptr[uint64](100000)}}},
		{"cpuset only", plan{CPUSet: []int{2}},
			&specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "2"}}},
		{"memory, swap accounted", plan{MemLimitBytes: 64 << 20, NoSwap: true},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](64 << 20), Swap: ptr[int64](64 << 20)}}},
		{"memory, no swap accounting", plan{MemLimitBytes: 64 << 20},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](64 << 20)}}},
		{"read throttle", plan{ReadBPS: 16000000, ReadDev: devNum{254, 0}},
			&specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{ThrottleReadBpsDevice: []specs.LinuxThrottleDevice{
				{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 254, Minor: 0}, Rate: 16000000}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v1Resources(tt.plan); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("v1Resources = %s, want %s", dump(got), dump(tt.want))
			}
		})
	}
}

func TestV2Resources_Plans(t *testing.T) {
	tests := []struct {
		name            string
		plan            plan
		want            *cgroup2.Resources
		wantControllers []string
	}{
		{"nothing", plan{}, &cgroup2.Resources{}, nil},
		{"cpus", plan{CPUSet: []int{0, 1}, QuotaUS: 150000, PeriodUS: 100000},
			&cgroup2.Resources{CPU: &cgroup2.CPU{Cpus: "0-1", Max: "150000 100000"}}, []string{"cpu", "cpuset"}},
		{"memory, swap accounted", plan{MemLimitBytes: 1 << 30, NoSwap: true},
			&cgroup2.Resources{Memory: &cgroup2.Memory{Max: ptr[int64](1 << 30), Swap: ptr[int64](0)}}, []string{"memory"}},
		{"read throttle", plan{ReadBPS: 50000000, ReadDev: devNum{8, 0}},
			&cgroup2.Resources{IO: &cgroup2.IO{Max: []cgroup2.Entry{{Type: cgroup2.ReadBPS, Major: 8, Minor: 0, Rate: 50000000}}}},
			[]string{"io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v2Resources(tt.plan)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("v2Resources = %s, want %s", dump(got), dump(tt.want))
			}
			if c := got.EnabledControllers(); !reflect.DeepEqual(c, tt.wantControllers) {
				t.Errorf("controllers = %v, want %v", c, tt.wantControllers)
			}
		})
	}
	// The io.max line the kernel gets.
	e := v2Resources(plan{ReadBPS: 16000000, ReadDev: devNum{254, 0}}).IO.Max[0]
	if got := e.String(); got != "254:0 rbps=16000000" {
		t.Errorf("io.max line = %q, want %q", got, "254:0 rbps=16000000")
	}
}

// dump shows resources with pointers followed.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestWholeDisk_FakeSysfs(t *testing.T) {
	sys := t.TempDir()
	mk := func(p, dev string, partition bool) {
		d := filepath.Join(sys, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "dev"), []byte(dev+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if partition {
			if err := os.WriteFile(filepath.Join(d, "partition"), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(d, filepath.Join(sys, "dev", "block", dev)); err != nil {
			t.Fatal(err)
		}
	}
	mk("devices/pci/virtio1/block/vda", "254:0", false)
	mk("devices/pci/nvme/block/nvme0n1", "259:0", false)
	mk("devices/pci/nvme/block/nvme0n1/nvme0n1p2", "259:2", true)
	tests := []struct {
		in      devNum
		want    devNum
		wantErr string
	}{
		{devNum{254, 0}, devNum{254, 0}, ""},     // whole disk stays
		{devNum{259, 2}, devNum{259, 0}, ""},     // partition -> its disk
		{devNum{0, 45}, devNum{}, "not a block"}, // overlay, tmpfs
	}
	for _, tt := range tests {
		got, err := wholeDisk(tt.in, sys)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestReadStatsV1_FakeFiles(t *testing.T) {
	root := t.TempDir()
	dirs := map[string]string{}
	files := map[string]map[string]string{
		"cpu":     {"cpu.stat": "nr_periods 40\nnr_throttled 12\nthrottled_time 1500000000\nnr_bursts 0\n"},
		"cpuacct": {"cpuacct.usage": "2500000000\n"},
		"memory": {
			"memory.usage_in_bytes":     "67108864\n",
			"memory.max_usage_in_bytes": "67174400\n",
			"memory.stat":               "cache 100\nrss 200\ntotal_cache 61865984\ntotal_rss 4194304\n",
			"memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		},
		"blkio": {"blkio.throttle.io_service_bytes": "254:0 Read 67108864\n254:0 Write 4096\n8:0 Read 10\n254:0 Total 67112960\nTotal 67112970\n"},
	}
	for c, fs := range files {
		dirs[c] = filepath.Join(root, c)
		if err := os.MkdirAll(dirs[c], 0o755); err != nil {
			t.Fatal(err)
		}
		for n, s := range fs {
			if err := os.WriteFile(filepath.Join(dirs[c], n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Unix(100, 0)
	got, err := readStatsV1(dirs, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time:                now,
		CPUUsageSeconds:     2.5, // 2.5e9 ns
		CPUPeriods:          40,
		CPUThrottledPeriods: 12,
		CPUThrottledSeconds: 1.5, // 1.5e9 ns
		MemUsageBytes:       67108864,
		MemPeakBytes:        67174400,
		MemCacheBytes:       61865984, // total_cache, not cache
		MemAnonBytes:        4194304,
		IOReadBytes:         67108874, // 67108864 + 10, Total lines ignored
		OOMEvents:           2,
	}
	if got != want {
		t.Errorf("stats = %+v\nwant %+v", got, want)
	}
	// Missing files (controller not mounted, group gone) read as zero.
	got, err = readStatsV1(map[string]string{"memory": filepath.Join(root, "absent")}, now)
	if err != nil || got != (runner.Stats{Time: now}) {
		t.Errorf("missing files: %+v, %v; want zero stats, no error", got, err)
	}
	// A garbled counter is an error that names the file.
	if err := os.WriteFile(filepath.Join(dirs["cpuacct"], "cpuacct.usage"), []byte("lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readStatsV1(dirs, now); err == nil || !strings.Contains(err.Error(), "cpuacct.usage") {
		t.Errorf("garbled counter: err = %v, want one naming cpuacct.usage", err)
	}
}

func TestReadStatsV2_FakeFiles(t *testing.T) {
	dir := t.TempDir()
	for n, s := range map[string]string{
		"cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 12\nthrottled_usec 1500000\n",
		"memory.current": "67108864\n",
		"memory.peak":    "70000000\n",
		"memory.stat":    "anon 4194304\nfile 61865984\nkernel 100\n",
		"memory.events":  "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n",
		"io.stat":        "254:0 rbytes=67108864 wbytes=4096 rios=512 wios=1 dbytes=0 dios=0\n8:0 rbytes=10 wbytes=0 rios=1 wios=0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(100, 0)
	got, err := readStatsV2(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time: now, CPUUsageSeconds: 2.5, CPUPeriods: 40, CPUThrottledPeriods: 12, CPUThrottledSeconds: 1.5,
		MemUsageBytes: 67108864, MemPeakBytes: 70000000, MemCacheBytes: 61865984, MemAnonBytes: 4194304,
		IOReadBytes: 67108874, OOMEvents: 1,
	}
	if got != want {
		t.Errorf("stats = %+v\nwant %+v", got, want)
	}
}

func TestSanitizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"resnet18", "resnet18"},
		{"my job/../x", "my_job_.._x"},
		{".hidden", "_hidden"},
		{"", "job"},
		{strings.Repeat("a", 100), strings.Repeat("a", 40)},
	}
	for _, tt := range tests {
		if got := sanitizeName(tt.in); got != tt.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestGate_Usage(t *testing.T) {
	if got := gate(nil, io.Discard); got != gateExitUsage {
		t.Errorf("gate() = %d, want %d", got, gateExitUsage)
	}
	if got := gate([]string{"true"}, io.Discard); got != gateExitUsage {
		t.Errorf("gate(true) = %d, want %d (missing --)", got, gateExitUsage)
	}
	if !IsGate([]string{"synergy", GateArg, "--", "x"}) || IsGate([]string{"synergy", "profile"}) || IsGate(nil) {
		t.Error("IsGate misclassifies")
	}
}
