package docker

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func TestCgroupPaths(t *testing.T) {
	const id = "/docker/0123abcd"
	// The mount table of this machine kind: v1 controllers under /cg, cpu
	// and cpuacct apart or co-mounted, and a cgroup2 at /cg/unified.
	mounts := func(v1 ...string) string {
		var b strings.Builder
		for i, c := range v1 {
			fmt.Fprintf(&b, "%d 20 0:%d / /cg/%s rw,nosuid - cgroup cgroup rw,%s\n", 30+i, 30+i, c, c)
		}
		b.WriteString("29 20 0:29 / /cg/unified rw - cgroup2 cgroup2 rw\n")
		return b.String()
	}
	tests := []struct {
		name       string
		proc, mnts string
		want       map[string]string
		bad        bool
	}{
		{
			name: "v1 split hierarchies (this machine)",
			proc: "9:name=systemd:" + id + "\n8:pids:" + id + "\n7:blkio:" + id + "\n4:memory:" + id + "\n3:cpuset:" + id + "\n2:cpuacct:" + id + "\n1:cpu:" + id + "\n0::/\n",
			mnts: mounts("pids", "blkio", "memory", "cpuset", "cpuacct", "cpu"),
			want: map[string]string{
				"pids": "/cg/pids" + id, "blkio": "/cg/blkio" + id, "memory": "/cg/memory" + id,
				"cpuset": "/cg/cpuset" + id, "cpuacct": "/cg/cpuacct" + id, "cpu": "/cg/cpu" + id,
			},
		},
		{
			name: "v1 co-mounted cpu,cpuacct",
			proc: "4:memory:" + id + "\n2:cpu,cpuacct:" + id + "\n",
			mnts: mounts("memory", "cpu,cpuacct"),
			want: map[string]string{"memory": "/cg/memory" + id, "cpu": "/cg/cpu,cpuacct" + id, "cpuacct": "/cg/cpu,cpuacct" + id},
		},
		{
			name: "v2 unified, Docker's systemd cgroup driver",
			proc: "0::/system.slice/docker-0123abcd.scope\n",
			mnts: "29 20 0:29 / /cg rw - cgroup2 cgroup2 rw\n",
			want: map[string]string{cgroupfs.KeyUnified: "/cg/system.slice/docker-0123abcd.scope"},
		},
		{
			name: "v2 unified, Docker's cgroupfs cgroup driver",
			proc: "0::" + id + "\n",
			mnts: "29 20 0:29 / /cg rw,nsdelegate,memory_recursiveprot - cgroup2 cgroup2 rw\n",
			want: map[string]string{cgroupfs.KeyUnified: "/cg" + id},
		},
		{name: "garbage", proc: "nonsense\n", mnts: mounts("memory"), bad: true},
		{name: "no memory, no unified", proc: "1:cpu:/x\n", mnts: mounts("cpu"), bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := t.TempDir()
			writeFiles(t, proc, map[string]string{"42/cgroup": tt.proc, "self/mountinfo": tt.mnts})
			got, err := cgroupPaths(proc, 42)
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v", err)
			}
			if !tt.bad && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadCgroupStats_V1(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"cpuacct/c/cpuacct.usage":                           "2500000000\n", // 2.5s
		"cpu/c/cpu.stat":                                    "nr_periods 40\nnr_throttled 10\nthrottled_time 300000000\nnr_bursts 0\n",
		"memory/c/memory.usage_in_bytes":                    "104857600\n",
		"memory/c/memory.max_usage_in_bytes":                "209715200\n",
		"memory/c/memory.stat":                              "cache 1\nrss 2\ntotal_cache 73400320\ntotal_rss 31457280\n",
		"memory/c/memory.oom_control":                       "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		"blkio/c/blkio.throttle.io_service_bytes_recursive": "254:0 Read 4096\n254:0 Write 8192\n253:0 Read 1000\n254:0 Total 12288\nTotal 13288\n",
	})
	dirs := map[string]string{}
	for _, c := range []string{"cpu", "cpuacct", "memory", "blkio"} {
		dirs[c] = filepath.Join(root, c, "c")
	}
	now := time.Unix(1700000000, 0)
	got, err := readCgroupStats(dirs, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time:            now,
		CPUUsageSeconds: 2.5, CPUPeriods: 40, CPUThrottledPeriods: 10, CPUThrottledSeconds: 0.3,
		MemUsageBytes: 100 << 20, MemPeakBytes: 200 << 20,
		MemCacheBytes: 70 << 20, MemAnonBytes: 30 << 20, // total_* preferred
		IOReadBytes: 5096, // 4096 + 1000: Read lines only
		OOMEvents:   2,
		Has:         runner.StatAll,
	}
	if !statsClose(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	// blkio files absent: no reads, no error.
	os.Remove(filepath.Join(root, "blkio/c/blkio.throttle.io_service_bytes_recursive"))
	got, err = readCgroupStats(dirs, now)
	if err != nil || got.IOReadBytes != 0 || got.Has&runner.StatIORead != 0 {
		t.Errorf("without blkio files: %+v, %v", got, err)
	}

	// The container has gone: its memory cgroup with it.
	os.RemoveAll(filepath.Join(root, "memory/c"))
	if _, err := readCgroupStats(dirs, now); err == nil {
		t.Error("no error for a removed cgroup")
	}
}

func TestReadCgroupStats_V2(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 20\nnr_throttled 5\nthrottled_usec 250000\n",
		"memory.current": "1048576\n",
		"memory.peak":    "2097152\n",
		"memory.stat":    "anon 524288\nfile 262144\nkernel 1000\n",
		"memory.events":  "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
		"io.stat":        "254:0 rbytes=4096 wbytes=0 rios=1 wios=0\n253:0 rbytes=100 wbytes=5\n",
	})
	now := time.Unix(1700000000, 0)
	got, err := readCgroupStats(map[string]string{cgroupfs.KeyUnified: dir}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time:            now,
		CPUUsageSeconds: 1.5, CPUPeriods: 20, CPUThrottledPeriods: 5, CPUThrottledSeconds: 0.25,
		MemUsageBytes: 1 << 20, MemPeakBytes: 2 << 20, MemAnonBytes: 512 << 10, MemCacheBytes: 256 << 10,
		IOReadBytes: 4196, OOMEvents: 1, Has: runner.StatAll,
	}
	if !statsClose(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestReadCgroupStats_CorruptFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cpu.stat": "usage_usec x\n", "memory.current": "1\n", "memory.stat": "", "memory.events": "",
	})
	_, err := readCgroupStats(map[string]string{cgroupfs.KeyUnified: dir}, time.Now())
	if err == nil || !strings.Contains(err.Error(), `cpu.stat: line 1: "usage_usec x"`) {
		t.Errorf("err = %v", err)
	}
}

func TestStatsFromAPI(t *testing.T) {
	var r container.StatsResponse
	r.CPUStats.CPUUsage.TotalUsage = 3e9
	r.CPUStats.ThrottlingData = container.ThrottlingData{Periods: 7, ThrottledPeriods: 2, ThrottledTime: 5e8}
	r.MemoryStats = container.MemoryStats{Usage: 1000, MaxUsage: 2000, Stats: map[string]uint64{"total_cache": 300, "total_rss": 600, "cache": 1}}
	r.BlkioStats.IoServiceBytesRecursive = []container.BlkioStatEntry{{Op: "Read", Value: 10}, {Op: "Write", Value: 99}, {Op: "read", Value: 5}}
	now := time.Unix(5, 0)
	got := statsFromAPI(r, now)
	want := runner.Stats{Time: now, CPUUsageSeconds: 3, CPUPeriods: 7, CPUThrottledPeriods: 2, CPUThrottledSeconds: 0.5,
		MemUsageBytes: 1000, MemPeakBytes: 2000, MemCacheBytes: 300, MemAnonBytes: 600, IOReadBytes: 15,
		Has: runner.StatAll &^ runner.StatOOMEvents} // v1 documents carry no oom_kill
	if !statsClose(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// v2 daemons name them file/anon.
	r.MemoryStats.Stats = map[string]uint64{"file": 7, "anon": 8, "oom_kill": 1}
	got = statsFromAPI(r, now)
	if got.MemCacheBytes != 7 || got.MemAnonBytes != 8 || got.OOMEvents != 1 {
		t.Errorf("v2 names: %+v", got)
	}
}

// statsClose compares Stats with a 1e-9 tolerance on the float fields.
func statsClose(a, b runner.Stats) bool {
	fa := []float64{a.CPUUsageSeconds, a.CPUThrottledSeconds}
	fb := []float64{b.CPUUsageSeconds, b.CPUThrottledSeconds}
	for i := range fa {
		if math.Abs(fa[i]-fb[i]) > 1e-9 {
			return false
		}
	}
	a.CPUUsageSeconds, a.CPUThrottledSeconds, b.CPUUsageSeconds, b.CPUThrottledSeconds = 0, 0, 0, 0
	return a == b
}
