package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/runner/local"
)

// threadAffinities returns the Cpus_allowed_list of every thread of every
// process listed in the cgroup directory dir.
func threadAffinities(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	procs := readFile(t, dir, "cgroup.procs")
	for _, pid := range strings.Fields(procs) {
		tasks, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
		if err != nil {
			continue // exited meanwhile
		}
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join("/proc", pid, "task", task.Name(), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
					out[pid+"/"+task.Name()] = strings.TrimSpace(v)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no threads found in %s", dir)
	}
	return out
}

// waitAffinity waits until every thread of the job allows exactly want.
func waitAffinity(t *testing.T, dir, want string) {
	t.Helper()
	var got map[string]string
	for range 50 {
		got = threadAffinities(t, dir)
		ok := true
		for _, v := range got {
			ok = ok && v == want
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("threads allow %v, want all %q", got, want)
}

func TestLocal_UpdateRunningJob(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to move a job between cpusets")
	}
	r := newRunner(t, local.Options{})
	job := helperJob(t, "update", "burn", "SYNERGY_TEST_CPU_SECONDS=100000")
	job.Limits = runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	defer func() {
		_ = h.Stop()
		if _, err := h.Wait(); err != nil {
			t.Error(err)
		}
		assertGone(t, paths)
	}()
	u := runner.AsUpdater(h)
	if u == nil {
		t.Fatal("the local runner's handle is not a runner.Updater")
	}
	cpusetDir, cpuDir, memDir := paths["cpuset"], paths["cpu"], paths["memory"]
	quotaFile, memFile := "cpu.cfs_quota_us", "memory.limit_in_bytes"
	if r.Mode() == cgroupfs.ModeV2 {
		cpusetDir, cpuDir, memDir = paths[cgroupfs.KeyUnified], paths[cgroupfs.KeyUnified], paths[cgroupfs.KeyUnified]
		quotaFile, memFile = "cpu.max", "memory.max"
	}
	waitAffinity(t, cpusetDir, "0")
	steps := []struct {
		limits           runner.Limits
		cpus, quota, mem string
	}{
		// 2 cpus -> cpuset 0-1, quota 2 × 100000us; memory raised to 128MiB = 134217728.
		{runner.Limits{CPUs: 2, MemLimitBytes: 128 << 20}, "0-1", "200000", "134217728"},
		// 0.5 cpu -> ceil = 1 core, quota 50000us; memory kept.
		{runner.Limits{CPUs: 0.5, MemLimitBytes: 128 << 20}, "0", "50000", "134217728"},
		// 1.5 cpus -> "0-1", 150000us; memory lowered to 96MiB = 100663296.
		{runner.Limits{CPUs: 1.5, MemLimitBytes: 96 << 20}, "0-1", "150000", "100663296"},
		// no limits: every available CPU, no quota, no memory limit.
		{runner.Limits{}, "0-1", "-1", ""},
	}
	for _, s := range steps {
		if err := u.Update(context.Background(), s.limits); err != nil {
			t.Fatalf("update to %s: %v", s.limits, err)
		}
		waitAffinity(t, cpusetDir, s.cpus)
		quota := readFile(t, cpuDir, quotaFile)
		if r.Mode() == cgroupfs.ModeV2 {
			quota = strings.Replace(strings.Fields(quota)[0], "max", "-1", 1)
		}
		if quota != s.quota {
			t.Errorf("after update to %s: %s = %q, want %q", s.limits, quotaFile, quota, s.quota)
		}
		mem := readFile(t, memDir, memFile)
		switch {
		case s.mem == "" && (mem == "max" || len(mem) >= 18): // v1 reads "no limit" as ~2^63
		case mem != s.mem:
			t.Errorf("after update to %s: %s = %q, want %q", s.limits, memFile, mem, s.mem)
		}
	}
	if err := u.Update(context.Background(), runner.Limits{CPUs: 3 * float64(runtime.NumCPU())}); err == nil {
		t.Error("update to more CPUs than available succeeded, want an error")
	}
}

func TestLocal_UpdateEndedJob(t *testing.T) {
	r := newRunner(t, local.Options{})
	h, err := r.Start(context.Background(), runner.Job{Name: "ended", Argv: []string{"true"}, Limits: runner.Limits{CPUs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	err = runner.AsUpdater(h).Update(context.Background(), runner.Limits{CPUs: 1})
	if !errors.Is(err, runner.ErrNotRunning) {
		t.Fatalf("update after Wait: %v, want ErrNotRunning", err)
	}
	fmt.Fprintln(os.Stderr, "update after wait:", err)
}
