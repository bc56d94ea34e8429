// Package testreq lets tests that need the real thing (cgroups, blkio
// throttling, a Docker engine, NVML) skip with their reason on a machine
// that lacks it, while CI turns those skips into failures for what its
// machine kind has: SYNERGY_REQUIRE lists the features that must be there
// ("cgroup,blkio,docker" or "all").
package testreq

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvVar names the variable that turns skips into failures.
const EnvVar = "SYNERGY_REQUIRE"

// Required reports whether feature must be present in this run.
func Required(feature string) bool {
	for _, f := range strings.Split(os.Getenv(EnvVar), ",") {
		f = strings.TrimSpace(f)
		if f == feature || f == "all" {
			return true
		}
	}
	return false
}

// Skip skips the test because feature is missing, or fails it when
// SYNERGY_REQUIRE says the feature must be there.
func Skip(t testing.TB, feature, reason string) {
	t.Helper()
	if Required(feature) {
		t.Fatalf("%s required (%s=%s) but unavailable: %s", feature, EnvVar, os.Getenv(EnvVar), reason)
	}
	t.Skipf("%s unavailable: %s", feature, reason)
}

// lockWait bounds how long Exclusive waits for another test process.
const lockWait = 15 * time.Minute

// Exclusive holds a host-wide lock named name until the test ends, so that
// tests of one shared engine (the one Slurm cluster, the one API server of
// the local scripts) in different test processes — a second `make test`
// beside the first — never run at the same time. It waits while another
// process holds it and fails the test, naming that process, after
// lockWait. The lock is a flock(2), dropped by the kernel when its holder
// dies: nothing stale is left. Within one process it is re-entrant: the
// tests of one package share it, and a test may ask twice.
func Exclusive(t testing.TB, name string) {
	t.Helper()
	held.mu.Lock()
	defer held.mu.Unlock()
	if held.n == nil {
		held.n, held.f = map[string]int{}, map[string]*os.File{}
	}
	if held.n[name] == 0 {
		held.f[name] = lockHost(t, name)
	}
	held.n[name]++
	t.Cleanup(func() {
		held.mu.Lock()
		defer held.mu.Unlock()
		if held.n[name]--; held.n[name] == 0 {
			f := held.f[name]
			_ = f.Truncate(0)
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
			delete(held.f, name)
		}
	})
}

// held counts this process's holds of each host-wide lock.
var held struct {
	mu sync.Mutex
	n  map[string]int
	f  map[string]*os.File
}

// lockHost takes the host-wide lock name, waiting at most lockWait.
func lockHost(t testing.TB, name string) *os.File {
	t.Helper()
	dir := "/run/synergy-tests"
	if err := os.MkdirAll(dir, 0o755); err != nil || syscall.Access(dir, 2 /* W_OK */) != nil {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("synergy-tests-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("test lock %s: %v", name, err)
		}
	}
	path := filepath.Join(dir, name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatalf("test lock %s: %v", name, err)
	}
	told := false
	for deadline := time.Now().Add(lockWait); ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			t.Fatalf("test lock %s: %v", path, err)
		}
		holder, _ := os.ReadFile(path)
		if len(holder) == 0 {
			holder = []byte("PID unknown")
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("waited %v for the %s tests of another test process (%s) to finish: %s is still held", lockWait, name, strings.TrimSpace(string(holder)), path)
		}
		if !told {
			t.Logf("waiting for the %s tests of another test process (%s) to finish (%s)", name, strings.TrimSpace(string(holder)), path)
			told = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("PID %d, %s\n", os.Getpid(), filepath.Base(os.Args[0]))), 0)
	return f
}
