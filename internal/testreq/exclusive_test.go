package testreq

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Another process holding the lock makes Exclusive wait until it lets go;
// a second hold in this process does not wait for the first.
func TestExclusive_WaitsForAnotherProcess(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	name := fmt.Sprintf("testreq-selftest-%d", os.Getpid())
	// Find the directory Exclusive uses by taking and dropping the lock once.
	var path string
	t.Run("first", func(t *testing.T) {
		Exclusive(t, name)
		held.mu.Lock()
		path = held.f[name].Name()
		held.mu.Unlock()
	})
	defer os.Remove(path)
	ready := filepath.Join(t.TempDir(), "ready")
	other := exec.Command("flock", path, "sh", "-c", "touch "+ready+"; sleep 1")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) never took the lock")
		}
	}
	start := time.Now()
	t.Run("second", func(t *testing.T) {
		Exclusive(t, name)
		if waited := time.Since(start); waited < 500*time.Millisecond {
			t.Errorf("took the lock after %v while another process held it for 1 s", waited)
		}
		done := make(chan struct{})
		go func() { Exclusive(t, name); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("a second hold in the same process waited")
		}
	})
	held.mu.Lock()
	defer held.mu.Unlock()
	if n := held.n[name]; n != 0 {
		t.Errorf("%d holds left after the tests ended", n)
	}
}
