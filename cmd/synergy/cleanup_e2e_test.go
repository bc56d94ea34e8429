package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner/owner"
)

// TestCleanupE2E_KillMinus9LeavesNothing runs the built synergy as a
// process of its own and kills it with SIGKILL while a point's job runs: the
// job is a shell (the runner's child) holding two sleeps of its own. Within
// 5 s no job process may remain (the shell gets its parent-death signal, the
// watchdog kills the rest with the cgroup), and the run's cgroups and work
// directory must be gone.
func TestCleanupE2E_KillMinus9LeavesNothing(t *testing.T) {
	needCgroups(t)
	b := buildBinaries(t)
	job := fmt.Sprintf("e2ekill%d", os.Getpid())
	marker := fmt.Sprintf("%d", 900000+os.Getpid()%90000)
	out := filepath.Join(t.TempDir(), "p.json")
	cmd := exec.Command(b.synergy, "profile", "--strategy", "axes", "--cpus", "1", "-b", "8", "--point-timeout", "5m",
		"--job-name", job, "--out", out, "--", "/bin/sh", "-c", "sleep "+marker+" & sleep "+marker+"1; wait", "sh")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	me, err := owner.Of(owner.ProcRoot, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !once && strings.HasSuffix(sc.Text(), ": starting") {
				close(started)
				once = true
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the first point never started:\n%s", log.String())
	}
	for deadline := time.Now().Add(10 * time.Second); len(leftoverProcesses(t, "sleep "+marker)) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job's processes never appeared:\n%s", log.String())
		}
	}
	if len(leftoverCgroups(t, job)) == 0 {
		t.Fatal("the running job has no cgroup")
	}

	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	killed := time.Now()
	var left []string
	for time.Since(killed) < 5*time.Second {
		if left = leftoverProcesses(t, "sleep "+marker); len(left) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("5 s after kill -9 of synergy, job processes remain: %v", left)
		for _, l := range left {
			exec.Command("kill", "-9", strings.SplitN(l, ":", 2)[0]).Run()
		}
	}
	t.Logf("job processes gone %v after kill -9", time.Since(killed).Round(time.Millisecond))
	// The watchdog removes the cgroups and the work directory right away.
	work, _ := filepath.Glob(filepath.Join(os.TempDir(), owner.TempDirPrefix+"-"+me.String()+"-*"))
	for deadline := time.Now().Add(5 * time.Second); (len(leftoverCgroups(t, job)) > 0 || len(work) > 0) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		work, _ = filepath.Glob(filepath.Join(os.TempDir(), owner.TempDirPrefix+"-"+me.String()+"-*"))
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left after kill -9: %v", left)
	}
	if len(work) > 0 {
		t.Errorf("work directories left after kill -9: %v", work)
	}
}

// TestCleanupE2E_RemovesDeadRunsLeftovers plants what a dead run leaves (a
// job cgroup named after it with a process inside, a work directory) and
// one of a live run; `synergy cleanup` removes the first and lists it.
func TestCleanupE2E_RemovesDeadRunsLeftovers(t *testing.T) {
	needCgroups(t)
	dead := exec.Command("sleep", "30")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadID, err := owner.Of(owner.ProcRoot, dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	dead.Process.Kill()
	dead.Wait()
	me, _ := owner.Self()
	root := "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
		root = "/sys/fs/cgroup" // v2
	}
	orphanCG := filepath.Join(root, fmt.Sprintf("synergy-e2eclean-%s-1", deadID))
	liveCG := filepath.Join(root, fmt.Sprintf("synergy-e2eclean-%s-2", me))
	for _, d := range []string{orphanCG, liveCG} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	// A process left in the orphaned cgroup is killed.
	stray := exec.Command("sleep", "300")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	defer stray.Process.Kill()
	if err := os.WriteFile(filepath.Join(orphanCG, "cgroup.procs"), []byte(fmt.Sprint(stray.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	strayDone := make(chan error, 1)
	go func() { strayDone <- stray.Wait() }()
	// The work directory goes into a temp dir of this test's own, which no
	// other synergy process on the host reaps (they look in theirs).
	t.Setenv("TMPDIR", t.TempDir())
	work := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%s-42", owner.TempDirPrefix, deadID))
	if err := os.MkdirAll(filepath.Join(work, "point-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)

	stdout, _, err := runCLI(t, "cleanup", "--docker", "no")
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"removed temp dir " + work}
	// The cgroup is in the host's one hierarchy: another synergy process
	// running now (a profile, another test binary) reaps it too, and may do
	// so first. Then it must be gone, but this cleanup cannot list it.
	if others := otherSynergyProcesses(); len(others) == 0 {
		wants = append(wants, "removed cgroup "+orphanCG)
	} else if !strings.Contains(stdout, "removed cgroup "+orphanCG) {
		t.Logf("cleanup did not list %s: other synergy processes that reap it too are running (%v)", orphanCG, others)
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("cleanup output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, liveCG) {
		t.Errorf("cleanup removed a live run's cgroup:\n%s", stdout)
	}
	for _, d := range []string{orphanCG, work} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there", d)
		}
	}
	if _, err := os.Stat(liveCG); err != nil {
		t.Errorf("live run's cgroup %s is gone: %v", liveCG, err)
	}
	select {
	case <-strayDone:
	case <-time.After(5 * time.Second):
		t.Error("the process in the orphaned cgroup was not killed")
	}
	if _, _, err := runCLI(t, "cleanup", "--docker", "maybe"); err == nil || !strings.Contains(err.Error(), "--docker") {
		t.Errorf("cleanup --docker maybe: %v, want an error naming --docker", err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) WriteString(x string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(x)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// otherSynergyProcesses lists the PIDs of the synergy processes on this
// host other than this one: a synergy binary or a test binary of this
// package (each reaps what dead runs left when it profiles or cleans up).
func otherSynergyProcesses() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		if c := strings.TrimSpace(string(comm)); c == "synergy" || c == "synergy.test" {
			pids = append(pids, pid)
		}
	}
	return pids
}
