package cgroupfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner"
)

const v1Root = "/sys/fs/cgroup"

// ownV1Dirs returns this process's cgroup v1 directory per controller (from
// /proc/self/cgroup), for the controllers mounted under /sys/fs/cgroup/<c>.
func ownV1Dirs(t testing.TB, controllers ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		testreq.Skip(t, "cgroup", "no /proc/self/cgroup: "+err.Error())
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	out := map[string]string{}
	for _, c := range controllers {
		p, ok := own[c]
		mnt := filepath.Join(v1Root, c)
		if _, err := os.Stat(filepath.Join(mnt, "cgroup.procs")); !ok || err != nil {
			testreq.Skip(t, "cgroup", fmt.Sprintf("cgroup v1 controller %s is not mounted at %s (this test creates v1 groups)", c, mnt))
		}
		out[c] = filepath.Join(mnt, p)
	}
	return out
}

// makeGroups creates a child group named name under each of own's
// directories and removes them when the test ends.
func makeGroups(t *testing.T, own map[string]string, name string) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		testreq.Skip(t, "cgroup", "creating cgroups needs root")
	}
	dirs := map[string]string{}
	for c, d := range own {
		dir := filepath.Join(d, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			testreq.Skip(t, "cgroup", fmt.Sprintf("cannot create a %s cgroup: %v", c, err))
		}
		dirs[c] = dir
		t.Cleanup(func() {
			// The group empties a moment after its last process is reaped.
			var err error
			for i := 0; i < 100; i++ {
				if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Errorf("remove cgroup %s: %v", dir, err)
		})
	}
	return dirs
}

// TestReader_RealV1 creates cpu, cpuacct, memory and blkio groups under this
// process's own, moves a shell into them, makes it burn CPU under a 20%
// quota, write a 32 MiB file (page cache charged to the group) and read it
// back with O_DIRECT (block I/O accounted to the group), then checks that
// the counters read through kept-open files are non-zero and grow.
func TestReader_RealV1(t *testing.T) {
	own := ownV1Dirs(t, KeyCPU, KeyCPUAcct, KeyMemory, KeyBlkio)
	dirs := makeGroups(t, own, fmt.Sprintf("synergy-cgroupfs-test-%d", os.Getpid()))
	quota := filepath.Join(dirs[KeyCPU], "cpu.cfs_quota_us")
	if err := os.WriteFile(quota, []byte("20000"), 0o644); err != nil { // 20 ms per 100 ms period
		t.Fatalf("set %s: %v", quota, err)
	}

	data := filepath.Join(t.TempDir(), "data")
	// Recent kernels account v1 block I/O only on a device with a throttle
	// rule: set a rule far above the disk's speed, as the profiler does for
	// its read-limited points.
	disk, err := DiskOf(filepath.Dir(data), "/sys")
	if err != nil {
		testreq.Skip(t, "blkio", err.Error())
	}
	rule := filepath.Join(dirs[KeyBlkio], "blkio.throttle.read_bps_device")
	if err := os.WriteFile(rule, []byte(disk.String()+" 100000000000"), 0o644); err != nil {
		t.Fatalf("set %s to %q: %v", rule, disk.String()+" 100000000000", err)
	}
	script := `while read cmd; do
  case "$cmd" in
  work)
    head -c 33554432 /dev/urandom > "$1" && sync &&
    dd if="$1" of=/dev/null bs=1M iflag=direct 2>/dev/null && echo done || echo failed ;;
  esac
done`
	cmd := exec.Command("sh", "-c", script, "sh", data)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	for c, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move pid %d into the %s group: %v", cmd.Process.Pid, c, err)
		}
	}
	lines := bufio.NewScanner(stdout)
	work := func() {
		t.Helper()
		if _, err := io.WriteString(stdin, "work\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() || lines.Text() != "done" {
			t.Fatalf("child: %q %v", lines.Text(), lines.Err())
		}
	}

	r, err := Open(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if m := r.Missing(); len(m) != 0 {
		t.Errorf("missing on a real v1 group: %v", m)
	}
	work()
	c1, err := r.Read(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after one pass: %+v", c1)
	const mib = 1 << 20
	checks := []struct {
		what string
		ok   bool
	}{
		{"cpu usage > 0", c1.CPUUsageSeconds > 0},
		{"cfs periods > 0", c1.CPUPeriods > 0},
		{"throttled periods > 0 under a 20% quota", c1.CPUThrottledPeriods > 0 && c1.CPUThrottledSeconds > 0},
		{"memory usage >= 16 MiB", c1.MemUsageBytes >= 16*mib},
		{"page cache >= 16 MiB after writing 32 MiB", c1.MemCacheBytes >= 16*mib},
		{"peak >= usage", c1.MemPeakBytes >= c1.MemUsageBytes},
		{"io read >= 32 MiB after an O_DIRECT read of 32 MiB", c1.IOReadBytes >= 32*mib},
		{"no oom kills", c1.Has&runner.StatOOMEvents != 0 && c1.OOMEvents == 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so (%+v)", c.what, c1)
		}
	}
	// The same open files, read again after more work, must show new values:
	// pread from offset 0 regenerates a cgroup file.
	work()
	c2, err := r.Read(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !(c2.CPUUsageSeconds > c1.CPUUsageSeconds) || !(c2.IOReadBytes > c1.IOReadBytes) {
		t.Errorf("counters did not grow on re-read: cpu %v -> %v s, io %d -> %d bytes", c1.CPUUsageSeconds, c2.CPUUsageSeconds, c1.IOReadBytes, c2.IOReadBytes)
	}
}

// BenchmarkReadFile compares the two ways of reading a cgroup file at 10 Hz:
// keeping it open and preading from 0 (what Reader does) against opening,
// reading and closing it each time.
func BenchmarkReadFile(b *testing.B) {
	own := ownV1Dirs(b, KeyMemory)
	path := filepath.Join(own[KeyMemory], "memory.stat")
	b.Run("pread", func(b *testing.B) {
		r, err := Open(map[string]string{KeyMemory: own[KeyMemory]})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		var of *openFile
		for _, f := range r.files {
			if f.path == path {
				of = f
			}
		}
		for b.Loop() {
			if _, err := r.pread(of); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reopen", func(b *testing.B) {
		buf := make([]byte, 16<<10)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Read(buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// BenchmarkRead is one Read of every counter file of this process's own
// v1 groups.
func BenchmarkRead(b *testing.B) {
	own := ownV1Dirs(b, KeyCPU, KeyCPUAcct, KeyMemory, KeyBlkio)
	r, err := Open(own)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := r.Read(time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
