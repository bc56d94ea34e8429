package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func TestUpdateResources(t *testing.T) {
	online := []int{0, 1, 2, 3}
	tests := []struct {
		name       string
		l          runner.Limits
		startedMem int64
		cpuset     string
		quota      int64
		mem        int64
		err        string
	}{
		// 1.5 cpus -> "0-1", 1.5 × 100000 = 150000us; mem = memswap = 128MiB.
		{"cpus and memory", runner.Limits{CPUs: 1.5, MemLimitBytes: 128 << 20}, 64 << 20, "0-1", 150000, 128 << 20, ""},
		// no CPU limit: every online CPU, quota -1; no memory limit before: left alone (0).
		{"lifted cpu, never limited memory", runner.Limits{}, 0, "0-3", -1, 0, ""},
		{"explicit cpuset", runner.Limits{CPUs: 0.5, CPUSet: []int{3}, MemLimitBytes: 64 << 20}, 64 << 20, "3", 50000, 64 << 20, ""},
		{"lifting memory", runner.Limits{CPUs: 1}, 64 << 20, "", 0, 0, "cannot lift"},
		{"too many cpus", runner.Limits{CPUs: 5, MemLimitBytes: 64 << 20}, 64 << 20, "", 0, 0, "needs 5 cores"},
		{"tiny quota", runner.Limits{CPUs: 0.005, MemLimitBytes: 64 << 20}, 64 << 20, "", 0, 0, "1000us"},
		{"tiny memory", runner.Limits{CPUs: 1, MemLimitBytes: 1 << 20}, 64 << 20, "", 0, 0, "6MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := updateResources(tt.l, online, tt.startedMem)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.CpusetCpus != tt.cpuset || r.CPUQuota != tt.quota || r.CPUPeriod != runner.DefaultCFSPeriodUS || r.Memory != tt.mem || r.MemorySwap != tt.mem {
				t.Errorf("got cpuset %q quota %d period %d mem %d swap %d, want %q %d %d %d %d",
					r.CpusetCpus, r.CPUQuota, r.CPUPeriod, r.Memory, r.MemorySwap, tt.cpuset, tt.quota, runner.DefaultCFSPeriodUS, tt.mem, tt.mem)
			}
		})
	}
}

// containerThreads returns the Cpus_allowed_list of each thread of the
// container's main process, read from the host's /proc.
func containerThreads(t *testing.T, id string) map[string]string {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ins, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid := ins.Container.State.Pid
	tasks, err := os.ReadDir(filepath.Join("/proc", itoa(pid), "task"))
	if err != nil {
		testreq.Skip(t, "docker", fmt.Sprintf("cannot read the container's threads from this host's /proc: %v", err))
	}
	out := map[string]string{}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "task", task.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[task.Name()] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func waitThreads(t *testing.T, id, want string) {
	t.Helper()
	var got map[string]string
	for range 50 {
		got = containerThreads(t, id)
		ok := len(got) > 0
		for _, v := range got {
			ok = ok && v == want
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("container threads allow %v, want all %q", got, want)
}

func TestEngine_UpdateRunningContainer(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to move a container between cpusets")
	}
	r := realRunner(t, Options{})
	job, stdout, _ := probeJob(t, "update", runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}, "--sleep")
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = h.Stop()
		if _, err := h.Wait(); err != nil {
			t.Error(err)
		}
		assertGone(t, h)
	}()
	id := h.(*handle).ID()
	u := runner.AsUpdater(h)
	if u == nil {
		t.Fatal("the docker runner's handle is not a runner.Updater")
	}
	waitThreads(t, id, "0")
	paths := h.CgroupPaths()
	steps := []struct {
		l                runner.Limits
		cpus, quota, mem string
	}{
		// 2 cpus -> "0-1", quota 200000us; memory raised to 128MiB = 134217728.
		{runner.Limits{CPUs: 2, MemLimitBytes: 128 << 20}, "0-1", "200000", "134217728"},
		// 0.5 cpu -> "0", 50000us; memory lowered to 96MiB = 100663296.
		{runner.Limits{CPUs: 0.5, MemLimitBytes: 96 << 20}, "0", "50000", "100663296"},
	}
	for _, s := range steps {
		if err := u.Update(context.Background(), s.l); err != nil {
			t.Fatalf("update to %s: %v", s.l, err)
		}
		waitThreads(t, id, s.cpus)
		if len(paths) == 0 {
			continue // cgroup not readable here: the threads are the check
		}
		quota, mem := cgroupValue(t, paths, "cpu", "cpu.cfs_quota_us", "cpu.max"), cgroupValue(t, paths, "memory", "memory.limit_in_bytes", "memory.max")
		if quota != s.quota || mem != s.mem {
			t.Errorf("after update to %s: quota %q mem %q, want %q %q", s.l, quota, mem, s.quota, s.mem)
		}
	}
	if err := u.Update(context.Background(), runner.Limits{CPUs: 1}); err == nil || !strings.Contains(err.Error(), "cannot lift") {
		t.Errorf("lifting the memory limit: err = %v, want a refusal", err)
	}
	if !strings.Contains(stdout.String(), "sleeping") {
		t.Logf("stdout so far:\n%s", stdout)
	}
	_ = h.Stop()
	if _, err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := u.Update(context.Background(), runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}); !errors.Is(err, runner.ErrNotRunning) {
		t.Errorf("update after Wait: %v, want ErrNotRunning", err)
	}
}

// cgroupValue reads a limit from the container's cgroup: the v1 file of
// controller, or the v2 file (its first field, "max" as "-1").
func cgroupValue(t *testing.T, paths map[string]string, controller, v1File, v2File string) string {
	t.Helper()
	if dir, ok := paths[cgroupfs.KeyUnified]; ok {
		v := strings.Fields(readFile(t, filepath.Join(dir, v2File)))[0]
		return strings.Replace(v, "max", "-1", 1)
	}
	return strings.TrimSpace(readFile(t, filepath.Join(paths[controller], v1File)))
}
