package local_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/local"
)

// ownerMain is the "owner" helper: a runner in a process of its own that
// starts a job holding a child of its own (sh running sleep in the
// background, then exec'ing sleep), prints the job's cgroup paths as one
// JSON line, and waits to be killed.
func ownerMain() int {
	r, err := local.New(local.Options{Prefix: os.Getenv("SYNERGY_TEST_PREFIX")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := r.Start(context.Background(), runner.Job{Name: "orphan", Argv: []string{"/bin/sh", "-c", "sleep 600 & exec sleep 601"},
		Limits: runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	paths := h.(interface{ CgroupPaths() map[string]string }).CgroupPaths()
	b, _ := json.Marshal(paths)
	fmt.Println(string(b))
	select {}
}

func procsIn(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(dir + "/cgroup.procs")
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	return pids
}

// procState is what /proc says of pid when a test finds it alive too
// long: its command, state, parent and signal masks (pending, blocked,
// ignored), to tell a lost signal from a blocked or unschedulable process.
func procState(pid int) string {
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	out := "cmdline: " + strings.ReplaceAll(string(cmd), "\x00", " ")
	for _, l := range strings.Split(string(b), "\n") {
		for _, k := range []string{"State:", "PPid:", "SigQ:", "SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "Cpus_allowed_list:"} {
			if strings.HasPrefix(l, k) {
				out += "\n" + l
			}
		}
	}
	return out
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0] != "Z" // a zombie has ended; only its parent's wait is missing
}

// TestReap_KillMinus9OfTheRunner kills a runner's process with SIGKILL
// while its job runs: the job's own process gets its parent-death signal at
// once, and ReapOrphans of another runner kills what the job left (a child
// of its own) and removes its cgroups.
func TestReap_KillMinus9OfTheRunner(t *testing.T) {
	newRunner(t, local.Options{}) // skips without root or cgroups
	prefix := fmt.Sprintf("synergy-reaptest%d", os.Getpid())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(exe)
	helper.Env = append(os.Environ(), helperEnv+"=owner", "SYNERGY_TEST_PREFIX="+prefix)
	helper.Stderr = os.Stderr
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		helper.Wait()
		t.Fatalf("owner helper: %v", err)
	}
	var paths map[string]string
	if err := json.Unmarshal([]byte(line), &paths); err != nil || len(paths) == 0 {
		t.Fatalf("owner helper printed %q: %v", line, err)
	}
	var anyDir string
	for _, d := range paths {
		anyDir = d
		break
	}
	// Both the job and its child are in the cgroup.
	var direct, grandchild int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (direct == 0 || grandchild == 0); time.Sleep(20 * time.Millisecond) {
		direct, grandchild = 0, 0
		for _, pid := range procsIn(t, anyDir) {
			if parentOf(pid) == helper.Process.Pid {
				direct = pid
			} else {
				grandchild = pid
			}
		}
	}
	if direct == 0 || grandchild == 0 {
		t.Fatalf("job processes in %s: direct %d, its child %d; want both", anyDir, direct, grandchild)
	}

	helper.Process.Signal(os.Kill)
	helper.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for running(direct) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if running(direct) {
		t.Errorf("job process %d outlived its runner by 5 s: no parent-death signal\n%s", direct, procState(direct))
	}

	// Another runner (this process) reaps the dead runner's cgroups and
	// what is left in them.
	r := newRunner(t, local.Options{Prefix: prefix})
	removed, err := r.ReapOrphans()
	if err != nil {
		t.Fatal(err)
	}
	for c, d := range paths {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s cgroup %s still there after ReapOrphans (removed: %v)", c, d, removed)
		}
	}
	t.Logf("removed %v", removed) // another synergy on this host may have reaped some first
	for deadline := time.Now().Add(5 * time.Second); running(grandchild) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if running(grandchild) {
		t.Errorf("the job's child %d survived ReapOrphans", grandchild)
		exec.Command("kill", "-9", strconv.Itoa(grandchild)).Run()
	}
}

// TestReap_LeavesLiveRunners checks that a live runner's running job is not
// reaped by another runner.
func TestReap_LeavesLiveRunners(t *testing.T) {
	prefix := fmt.Sprintf("synergy-reaplive%d", os.Getpid())
	r := newRunner(t, local.Options{Prefix: prefix})
	h, err := r.Start(context.Background(), runner.Job{Name: "live", Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Stop(); h.Wait() }()
	removed, err := newRunner(t, local.Options{Prefix: prefix}).ReapOrphans()
	if err != nil || len(removed) > 0 {
		t.Fatalf("ReapOrphans removed %v (%v) while their runner lives", removed, err)
	}
	for _, d := range h.(interface{ CgroupPaths() map[string]string }).CgroupPaths() {
		if len(procsIn(t, d)) == 0 {
			t.Errorf("cgroup %s of a live job is empty", d)
		}
	}
}
