package cgroupfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/synergy-sched/synergy/runner"
)

func TestResolvePaths(t *testing.T) {
	tests := []struct {
		name string
		want map[string]string
	}{
		{"hybrid", map[string]string{ // this machine kind: v1 + an empty cgroup2
			"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "cpuset": "/sys/fs/cgroup/cpuset",
			"memory":  "/sys/fs/cgroup/memory/process_api/3f91d3e4aa371fe0bed82e9d01e3c9ee",
			"devices": "/sys/fs/cgroup/devices", "freezer": "/sys/fs/cgroup/freezer", "blkio": "/sys/fs/cgroup/blkio",
			"pids": "/sys/fs/cgroup/pids", "name=systemd": "/sys/fs/cgroup/systemd", "unified": "/sys/fs/cgroup/unified",
		}},
		{"v2", map[string]string{"unified": "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"}},
		{"combined", map[string]string{ // cpu,cpuacct co-mounted; blkio mounted at a container's root
			"cpu": "/sys/fs/cgroup/cpu,cpuacct/docker/abc/job", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct/docker/abc/job",
			"memory": "/sys/fs/cgroup/memory/docker/abc/job", "blkio": "/sys/fs/cgroup/blkio/job",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := os.ReadFile(filepath.Join("testdata", tt.name+".cgroup"))
			if err != nil {
				t.Fatal(err)
			}
			mi, err := os.ReadFile(filepath.Join("testdata", tt.name+".mountinfo"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolvePaths(cg, mi)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestResolvePaths_Errors(t *testing.T) {
	mi := []byte("27 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	if _, err := resolvePaths([]byte("garbage\n"), mi); err == nil {
		t.Error("a malformed cgroup line passed")
	}
	if _, err := resolvePaths([]byte("4:memory:/x\n"), mi); err == nil {
		t.Error("a v1 controller with no mount resolved")
	}
}

func TestUnescape(t *testing.T) {
	if got := Unescape(`/mnt/with\040space`); got != "/mnt/with space" {
		t.Errorf("got %q", got)
	}
}

// TestPathsOf_Self resolves this process's own cgroups on this machine and
// opens them.
func TestPathsOf_Self(t *testing.T) {
	paths, err := PathsOf("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(paths)
	if err != nil {
		t.Fatalf("open own cgroups %v: %v", paths, err)
	}
	defer r.Close()
	c, err := r.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Has&runner.StatMemUsage == 0 || c.MemUsageBytes <= 0 {
		t.Errorf("own memory usage = %d (has %v), want > 0 from %v", c.MemUsageBytes, c.Has&runner.StatMemUsage != 0, r.Files())
	}
}
