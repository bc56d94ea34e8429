package reap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner/owner"
)

func TestMain(m *testing.M) {
	if IsWatchdog(os.Args) {
		WatchdogMain()
	}
	os.Exit(m.Run())
}

// A run that ends normally closes its watchdog, which exits at once.
func TestWatch_CloseEndsIt(t *testing.T) {
	wd, err := Watch(Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wd.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watchdog exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not exit after Close")
	}
}

// End of file on the pipe (the run died) makes the watchdog reap: here a
// work directory of a dead owner.
func TestWatchdog_EOFReaps(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := owner.ID{PID: 1 << 22, Start: 1} // above pid_max's default range: no such process
	work := filepath.Join(tmp, owner.TempDirPrefix+"-"+dead.String()+"-9")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	var stderr bytes.Buffer
	code := watchdog([]string{"--owner", dead.String()}, r, &stderr) // gone: no wait
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("work dir of the dead run still there (exit %d): %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), work) {
		t.Errorf("the watchdog did not say what it removed: %q", stderr.String())
	}
	if code := watchdog([]string{"--bogus"}, r, &stderr); code != 2 {
		t.Errorf("unknown argument: exit %d, want 2", code)
	}
}

// writeStat writes procRoot/PID/stat for a process in state with start time
// start (field 22).
// It reports a failure with t.Error, so a goroutine of the test may call it.
func writeStat(t *testing.T, procRoot string, pid int, state string, start uint64) {
	t.Helper()
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	line := fmt.Sprintf("%d (synergy) %s %s%d 0 0\n", pid, state, strings.Repeat("0 ", 18), start)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Error(err)
	} else if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Error(err)
	}
}

// A run killed with -9 closes its pipe before it shows as a zombie, and
// the reaping spares a run that shows as alive: the watchdog waits for the
// run to be gone first.
func TestWaitGone_WaitsForTheRunToShowAsDead(t *testing.T) {
	procRoot := t.TempDir()
	run := owner.ID{PID: 4242, Start: 777}
	writeStat(t, procRoot, run.PID, "R", run.Start)
	if got, err := owner.Of(procRoot, run.PID); err != nil || got != run || !owner.Alive(procRoot, run) {
		t.Fatalf("fake procfs: Of = %v, %v; want %v alive", got, err, run)
	}
	begin := time.Now()
	go func() {
		time.Sleep(100 * time.Millisecond)
		writeStat(t, procRoot, run.PID, "Z", run.Start)
	}()
	if !waitGone(procRoot, run, 10*time.Second) {
		t.Fatal("waitGone gave up on a run that became a zombie")
	}
	if d := time.Since(begin); d < 100*time.Millisecond {
		t.Errorf("waitGone returned after %v, before the run showed as a zombie", d)
	}
	// Still running at the limit: it says so.
	writeStat(t, procRoot, run.PID, "S", run.Start)
	if waitGone(procRoot, run, 20*time.Millisecond) {
		t.Error("waitGone reported a running process gone")
	}
	// Gone, or its PID taken by another process: at once.
	if !waitGone(procRoot, owner.ID{PID: 4343, Start: 1}, 0) {
		t.Error("a missing process is not gone")
	}
	if !waitGone(procRoot, owner.ID{PID: run.PID, Start: 1}, 0) {
		t.Error("a PID reused by a later process still counts as the run")
	}
}

// The watchdog is told its run and refuses an owner it cannot read.
func TestWatchdog_OwnerArgument(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Close()
	var stderr bytes.Buffer
	if code := watchdog([]string{"--owner", "not-an-owner"}, r, &stderr); code != 2 || !strings.Contains(stderr.String(), "--owner") {
		t.Errorf("bad --owner: exit %d, stderr %q; want 2 naming the flag", code, stderr.String())
	}
}
