package reap

import (
	"bytes"
	"os"
	"path/filepath"
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
	code := watchdog(nil, r, &stderr)
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
