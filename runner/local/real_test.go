package local_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/pagecache"
)

// helperEnv selects a helper mode when the test binary is run as a job.
const helperEnv = "SYNERGY_LOCAL_TEST_HELPER"

// TestMain dispatches the two re-exec modes before running tests: the v1
// gate (as cmd/synergy does) and the job helpers below.
func TestMain(m *testing.M) {
	if local.IsGate(os.Args) {
		local.GateMain()
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a job: "alloc" touches SYNERGY_TEST_BYTES of anonymous
// memory; "burn" spins until it has used SYNERGY_TEST_CPU_SECONDS of CPU;
// "read" reads SYNERGY_TEST_FILE once and prints the byte count.
func helperMain(mode string) int {
	switch mode {
	case "alloc":
		// mmap'd, not Go heap, so a -race build's shadow memory stays out.
		n, _ := strconv.Atoi(os.Getenv("SYNERGY_TEST_BYTES"))
		mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		fmt.Println("allocated", n>>20, "MiB")
		return 0
	case "burn":
		want, _ := strconv.ParseFloat(os.Getenv("SYNERGY_TEST_CPU_SECONDS"), 64)
		x := 0
		for {
			for i := 0; i < 1e6; i++ {
				x += i
			}
			var ru unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
			used := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
			if used >= want {
				fmt.Println("burnt", used, x > 0)
				return 0
			}
		}
	case "owner":
		return ownerMain()
	case "read":
		f, err := os.Open(os.Getenv("SYNERGY_TEST_FILE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		buf := make([]byte, 1<<20)
		var total int64
		for {
			n, err := f.Read(buf)
			total += int64(n)
			if err != nil {
				break
			}
		}
		fmt.Println(total)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// newRunner returns a runner on this host's cgroups or skips.
func newRunner(t *testing.T, opts local.Options) *local.Runner {
	t.Helper()
	if os.Geteuid() != 0 {
		testreq.Skip(t, "cgroup", "not root")
	}
	if opts.Prefix == "" {
		opts.Prefix = "synergy-test"
	}
	r, err := local.New(opts)
	if err != nil {
		testreq.Skip(t, "cgroup", err.Error())
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close the runner: %v", err)
		}
	})
	return r
}

func helperJob(t *testing.T, name, mode string, env ...string) runner.Job {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return runner.Job{Name: name, Argv: []string{exe}, Env: append([]string{helperEnv + "=" + mode}, env...)}
}

// assertGone checks that every cgroup directory of a finished job is gone.
func assertGone(t *testing.T, paths map[string]string) {
	t.Helper()
	if len(paths) == 0 {
		t.Fatal("no cgroup paths")
	}
	for c, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s cgroup %s still there after Wait (stat: %v)", c, p, err)
		}
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper is dead).
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// output collects a job's stdout.
type output struct{ strings.Builder }

func run(t *testing.T, r *local.Runner, job runner.Job) (runner.Result, string, map[string]string) {
	t.Helper()
	var out output
	job.Stdout = &out
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, paths)
	return res, out.String(), paths
}

func TestLocal_JobStartsInsideItsCgroup(t *testing.T) {
	r := newRunner(t, local.Options{})
	res, out, paths := run(t, r, runner.Job{
		Name:   "whereami",
		Argv:   []string{"sh", "-c", "grep Cpus_allowed_list /proc/self/status; nproc; cat /proc/self/cgroup"},
		Limits: runner.Limits{CPUs: 1},
	})
	if res.ExitCode != 0 || res.Signal != "" || res.OOMKilled || res.Stopped {
		t.Fatalf("result %+v, want a clean exit; output:\n%s", res, out)
	}
	lines := strings.Split(out, "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "Cpus_allowed_list: 0" {
		t.Errorf("job sees %q, want cpuset 0 (cpus=1)", lines[0])
	}
	if lines[1] != "1" {
		t.Errorf("nproc = %q, want 1", lines[1])
	}
	// The job's own view of its cgroups names the directories the runner made.
	for c, p := range paths {
		name := filepath.Base(p)
		found := false
		for _, l := range lines[2:] {
			parts := strings.SplitN(l, ":", 3)
			if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+c+",") && filepath.Base(parts[2]) == name {
				found = true
			}
		}
		if !found && c != "unified" {
			t.Errorf("job's /proc/self/cgroup does not put it in %s cgroup %s:\n%s", c, name, out)
		}
	}
}

func TestLocal_LimitsWrittenAndStop(t *testing.T) {
	r := newRunner(t, local.Options{})
	job := runner.Job{Name: "sleeper", Argv: []string{"sleep", "300"},
		Limits: runner.Limits{CPUs: 0.5, MemLimitBytes: 256 << 20}}
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	defer func() { _ = h.Stop(); _, _ = h.Wait() }()
	if r.Mode() == cgroupfs.ModeV2 {
		d := paths["unified"]
		if got := readFile(t, d, "cpu.max"); got != "50000 100000" { // 0.5 × 100000
			t.Errorf("cpu.max = %q", got)
		}
		if got := readFile(t, d, "memory.max"); got != strconv.Itoa(256<<20) {
			t.Errorf("memory.max = %q", got)
		}
	} else {
		if got := readFile(t, paths["cpu"], "cpu.cfs_quota_us"); got != "50000" { // 0.5 × 100000
			t.Errorf("cfs_quota_us = %q, want 50000", got)
		}
		if got := readFile(t, paths["cpu"], "cpu.cfs_period_us"); got != "100000" {
			t.Errorf("cfs_period_us = %q, want 100000", got)
		}
		if got := readFile(t, paths["cpuset"], "cpuset.cpus"); got != "0" { // ceil(0.5) = 1 core
			t.Errorf("cpuset.cpus = %q, want 0", got)
		}
		if got, want := readFile(t, paths["cpuset"], "cpuset.mems"), readFile(t, filepath.Dir(paths["cpuset"]), "cpuset.mems"); got != want || got == "" {
			t.Errorf("cpuset.mems = %q, want the parent's %q", got, want)
		}
		if got := readFile(t, paths["memory"], "memory.limit_in_bytes"); got != strconv.Itoa(256<<20) {
			t.Errorf("memory.limit_in_bytes = %q, want %d", got, 256<<20)
		}
		if _, err := os.Stat(filepath.Join(paths["memory"], "memory.memsw.limit_in_bytes")); err == nil {
			if got := readFile(t, paths["memory"], "memory.memsw.limit_in_bytes"); got != strconv.Itoa(256<<20) {
				t.Errorf("memory.memsw.limit_in_bytes = %q, want %d (no swap)", got, 256<<20)
			}
		}
		procs := readFile(t, paths["memory"], "cgroup.procs")
		if procs == "" {
			t.Error("memory cgroup has no process")
		}
	}
	st, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// The exec itself ran inside the cgroup, so some CPU time is there
	// (memory may not be faulted in yet).
	if st.Time.IsZero() || st.CPUUsageSeconds <= 0 {
		t.Errorf("running stats %+v, want a time and some CPU used", st)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Signal != "killed" || res.ExitCode != -1 || res.OOMKilled {
		t.Errorf("result %+v, want stopped by SIGKILL", res)
	}
	assertGone(t, paths)
	if st2, err := h.Stats(); err != nil || st2 != res.Final {
		t.Errorf("Stats after Wait = %+v, %v; want the final counters", st2, err)
	}
}

// peakSlackBytes is how far the recorded peak may pass the limit: the
// kernel can charge a page or two over it while it reclaims or OOM-kills
// (seen here: limit + 4096 once in 30 runs).
const peakSlackBytes = 64 << 12

func TestLocal_OOMKill(t *testing.T) {
	r := newRunner(t, local.Options{})
	const limit = 64 << 20
	job := helperJob(t, "hog", "alloc", fmt.Sprint("SYNERGY_TEST_BYTES=", 256<<20))
	job.Limits = runner.Limits{MemLimitBytes: limit}
	res, out, _ := run(t, r, job)
	if !res.OOMKilled || res.Signal != "killed" || res.ExitCode != -1 || res.Stopped {
		t.Errorf("result %+v (output %q), want OOM-killed by SIGKILL", res, out)
	}
	if res.Final.OOMEvents == 0 {
		t.Errorf("final stats count no OOM kill: %+v", res.Final)
	}
	if res.Final.MemPeakBytes > limit+peakSlackBytes || res.Final.MemPeakBytes < limit/2 {
		t.Errorf("peak %d bytes, want near and at most the %d limit", res.Final.MemPeakBytes, limit)
	}
	// Under the limit the same helper runs to the end.
	job.Limits.MemLimitBytes = 512 << 20
	res, out, _ = run(t, r, job)
	if res.OOMKilled || res.ExitCode != 0 || !strings.Contains(out, "allocated 256 MiB") {
		t.Errorf("under a 512MiB limit: %+v, output %q; want a clean run", res, out)
	}
	if res.Final.MemPeakBytes < 256<<20 {
		t.Errorf("peak %d bytes after touching 256MiB", res.Final.MemPeakBytes)
	}
}

// bigFile writes size random bytes under dir, synced and evicted.
func bigFile(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "data.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	if _, err := rand.Read(chunk); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size/len(chunk); i++ {
		chunk[0] = byte(i)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pagecache.Evict(dir); err != nil {
		t.Fatal(err)
	}
	res, tot, err := pagecache.Resident(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res > tot/20 {
		testreq.Skip(t, "pagecache", fmt.Sprintf("%s: %d of %d bytes stay cached after eviction (tmpfs?)", dir, res, tot))
	}
	return p
}

func TestLocal_PageCacheChargedAndReclaimed(t *testing.T) {
	r := newRunner(t, local.Options{})
	const limit, size = 64 << 20, 192 << 20
	p := bigFile(t, size)
	job := helperJob(t, "reader", "read", "SYNERGY_TEST_FILE="+p)
	job.Limits = runner.Limits{MemLimitBytes: limit}
	res, out, _ := run(t, r, job)
	if res.ExitCode != 0 || res.OOMKilled || strings.TrimSpace(out) != strconv.Itoa(size) {
		t.Fatalf("result %+v, output %q: want a clean read of %d bytes (clean page cache is reclaimed, not OOM)", res, out, size)
	}
	f := res.Final
	if f.MemPeakBytes > limit+peakSlackBytes {
		t.Errorf("peak %d bytes above the %d limit", f.MemPeakBytes, limit)
	}
	if f.MemCacheBytes < limit/4 {
		t.Errorf("page cache charged to the job %d bytes, want >= %d (cache is charged)", f.MemCacheBytes, limit/4)
	}
	if f.IOReadBytes < size*9/10 {
		t.Errorf("read %d bytes from disk, want >= %d (file was evicted)", f.IOReadBytes, size*9/10)
	}
	t.Logf("final: peak %d, cache %d, anon %d, disk read %d bytes in %.2fs", f.MemPeakBytes, f.MemCacheBytes, f.MemAnonBytes, f.IOReadBytes, res.WallSeconds)
}

func TestLocal_ReadThrottle(t *testing.T) {
	r := newRunner(t, local.Options{})
	const size, bps = 64 << 20, 16e6
	p := bigFile(t, size)
	job := helperJob(t, "slowreader", "read", "SYNERGY_TEST_FILE="+p)
	job.Limits = runner.Limits{ReadBPS: bps, ReadBPSPath: p}
	var out output
	job.Stdout = &out
	h, err := r.Start(context.Background(), job)
	if err != nil {
		if strings.Contains(err.Error(), "not a block device") || strings.Contains(err.Error(), "blkio") {
			testreq.Skip(t, "blkio", err.Error())
		}
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, paths)
	if res.ExitCode != 0 || strings.TrimSpace(out.String()) != strconv.Itoa(size) {
		t.Fatalf("result %+v, output %q", res, out.String())
	}
	if res.Final.IOReadBytes < size*9/10 {
		t.Errorf("disk read %d bytes, want >= %d", res.Final.IOReadBytes, size*9/10)
	}
	// 64MiB / 16MB/s = 4.19s; ask for half of it.
	minSeconds := 0.5 * float64(size) / bps
	if res.WallSeconds < minSeconds {
		t.Errorf("read %d bytes in %.2fs under a %g B/s limit, want >= %.2fs", size, res.WallSeconds, bps, minSeconds)
	}
	t.Logf("throttled read: %d bytes in %.2fs = %.1f MB/s (limit %.0f MB/s)", res.Final.IOReadBytes, res.WallSeconds,
		float64(res.Final.IOReadBytes)/1e6/res.WallSeconds, bps/1e6)
}

func TestLocal_CPUQuotaThrottles(t *testing.T) {
	r := newRunner(t, local.Options{})
	const cpus, work = 0.2, 0.4
	job := helperJob(t, "burner", "burn", fmt.Sprint("SYNERGY_TEST_CPU_SECONDS=", work))
	job.Limits = runner.Limits{CPUs: cpus}
	res, out, _ := run(t, r, job)
	if res.ExitCode != 0 {
		t.Fatalf("result %+v output %q", res, out)
	}
	f := res.Final
	// The helper's rusage also counts the gate's start-up before it joined
	// the cgroup: allow 10%.
	if f.CPUUsageSeconds < 0.9*work {
		t.Errorf("cgroup CPU usage %.3fs, want >= 0.9 × %.1fs the job burnt", f.CPUUsageSeconds, work)
	}
	if f.CPUPeriods == 0 || f.CPUThrottledPeriods == 0 || f.CPUThrottledSeconds <= 0 {
		t.Errorf("no throttling recorded under cpus=%g: %+v", cpus, f)
	}
	// 0.4 CPU-seconds at 0.2 CPUs take >= 2s; ask for half.
	if min := 0.5 * work / cpus; res.WallSeconds < min {
		t.Errorf("wall %.2fs, want >= %.2fs under the quota", res.WallSeconds, min)
	}
}

// readPIDs reads n pids, one per line, from the job's stdout pipe.
func readPIDs(t *testing.T, f *os.File, n int) []int {
	t.Helper()
	_ = f.SetReadDeadline(time.Now().Add(30 * time.Second))
	s := bufio.NewScanner(f)
	var pids []int
	for len(pids) < n && s.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(s.Text()))
		if err != nil {
			t.Fatalf("job printed %q, want a pid", s.Text())
		}
		pids = append(pids, pid)
	}
	if len(pids) < n {
		t.Fatalf("got pids %v, want %d (%v)", pids, n, s.Err())
	}
	return pids
}

func TestLocal_StopKillsGroupAndStragglers(t *testing.T) {
	r := newRunner(t, local.Options{})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// A child in the job's process group, and one that left it (setsid):
	// only the cgroup still holds the second.
	h, err := r.Start(context.Background(), runner.Job{
		Name: "forker",
		// Each child prints its own pid, so the setsid one prints after it
		// has left the group.
		Argv: []string{"sh", "-c", `sh -c 'echo $$; exec sleep 300' & ` +
			`setsid sh -c 'echo $$; exec sleep 300' & echo $$; wait`},
		Stdout: pw,
	})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	pids := readPIDs(t, pr, 3)
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("pid %d not running before Stop", pid)
		}
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Signal != "killed" {
		t.Errorf("result %+v, want stopped by SIGKILL", res)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived Stop", pid)
		}
	}
	assertGone(t, paths)
}

func TestLocal_EndingsAlwaysRemoveCgroup(t *testing.T) {
	r := newRunner(t, local.Options{})
	tests := []struct {
		name     string
		argv     []string
		wantCode int
		wantSig  string
	}{
		{"success", []string{"true"}, 0, ""},
		{"non-zero exit", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, -1, "terminated"},
		// The job exits 0 but leaves a daemon behind in its cgroup.
		// head returns once the daemon has printed its pid from its new session.
		{"straggler after exit", []string{"sh", "-c", `(setsid sh -c 'echo $$; exec sleep 300' &) | head -n 1`}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, _ := run(t, r, runner.Job{Name: tt.name, Argv: tt.argv, Limits: runner.Limits{MemLimitBytes: 128 << 20}})
			if res.ExitCode != tt.wantCode || res.Signal != tt.wantSig || res.Stopped || res.OOMKilled {
				t.Errorf("result %+v, want exit %d signal %q", res, tt.wantCode, tt.wantSig)
			}
			if tt.name == "straggler after exit" {
				pid, err := strconv.Atoi(strings.TrimSpace(out))
				if err != nil {
					t.Fatalf("job printed %q, want the daemon's pid", out)
				}
				if alive(pid) {
					t.Errorf("straggler %d survived Wait", pid)
				}
			}
		})
	}
}

func TestLocal_ContextCancelStops(t *testing.T) {
	r := newRunner(t, local.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	h, err := r.Start(ctx, runner.Job{Name: "cancelled", Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	paths := h.CgroupPaths()
	cancel()
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Signal != "killed" {
		t.Errorf("result %+v, want stopped", res)
	}
	assertGone(t, paths)
	if _, err := r.Start(ctx, runner.Job{Name: "late", Argv: []string{"true"}}); err == nil {
		t.Error("Start with a cancelled context succeeded")
	}
}

// leftovers lists job cgroups with prefix under the runner's parents.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	var found []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.HasPrefix(d.Name(), prefix) {
				found = append(found, p)
				return filepath.SkipDir
			}
			return nil
		})
	}
	return found
}

func TestLocal_StartFailuresLeaveNothing(t *testing.T) {
	r := newRunner(t, local.Options{Prefix: "synergy-startfail"})
	// A directory that surely does not exist: inside a fresh temporary one.
	missing := filepath.Join(t.TempDir(), "missing")
	program, dir := filepath.Join(missing, "train.py"), filepath.Join(missing, "dir")
	tests := []struct {
		name    string
		job     runner.Job
		wantErr string
	}{
		{"missing program", runner.Job{Name: "x", Argv: []string{program}}, program},
		{"not on PATH", runner.Job{Name: "x", Argv: []string{"no-such-synergy-program"}}, "no-such-synergy-program"},
		{"empty argv", runner.Job{Name: "x"}, "empty command"},
		{"missing working directory", runner.Job{Name: "x", Argv: []string{"true"}, Dir: dir}, "working directory " + dir},
		{"gate path that is no gate", runner.Job{Name: "x", Argv: []string{"true"}}, "did not answer"},
		{"too many cpus", runner.Job{Name: "x", Argv: []string{"true"}, Limits: runner.Limits{CPUs: 4096}}, "cpus=4096"},
		{"read limit on tmpfs-like path", runner.Job{Name: "x", Argv: []string{"true"},
			Limits: runner.Limits{ReadBPS: 1e6, ReadBPSPath: "/proc/self/status"}}, "not a block device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			if strings.HasPrefix(tt.name, "gate path") {
				if r.Mode() == cgroupfs.ModeV2 {
					t.Skip("no gate on cgroup v2")
				}
				r = newRunner(t, local.Options{Prefix: "synergy-startfail", GatePath: "/bin/true"})
			}
			_, err := r.Start(context.Background(), tt.job)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if l := leftovers(t, "synergy-startfail"); len(l) > 0 {
				t.Errorf("cgroups left after a failed start: %v", l)
			}
		})
	}
}

// On this machine kind (hybrid) the cgroup2 mount at /sys/fs/cgroup/unified
// has no cpu/memory/io controllers, but it exercises the v2 start path
// (clone into the cgroup), cgroup.kill, stats and removal for real.
func TestLocal_V2StartOnUnifiedMount(t *testing.T) {
	const root = "/sys/fs/cgroup/unified"
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		testreq.Skip(t, "cgroup", root+" is not a cgroup2 mount")
	}
	r := newRunner(t, local.Options{Mode: cgroupfs.ModeV2, CgroupRoot: root})
	res, out, paths := run(t, r, runner.Job{Name: "v2", Argv: []string{"cat", "/proc/self/cgroup"}})
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	want := "0::" + strings.TrimPrefix(paths["unified"], root)
	if !strings.Contains(out, want+"\n") {
		t.Errorf("job's /proc/self/cgroup:\n%s\nwant a line %q", out, want)
	}
	h, err := r.Start(context.Background(), runner.Job{Name: "v2stop", Argv: []string{"sh", "-c", "setsid sleep 300 & sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	paths = h.CgroupPaths()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Wait(); err != nil || !res.Stopped {
		t.Errorf("result %+v, %v; want stopped", res, err)
	}
	assertGone(t, paths)
	// Limits need controllers this mount does not have: a clear error.
	_, err = r.Start(context.Background(), runner.Job{Name: "v2mem", Argv: []string{"true"}, Limits: runner.Limits{MemLimitBytes: 1 << 30}})
	if err == nil || !strings.Contains(err.Error(), "memory controller is not available") {
		t.Errorf("err = %v, want the memory controller named", err)
	}
}

func TestLocal_ExplicitParent(t *testing.T) {
	const parent = "/synergy-test-parent"
	r := newRunner(t, local.Options{Parent: parent})
	t.Cleanup(func() {
		for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory", "blkio"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", c, parent))
		}
	})
	res, out, paths := run(t, r, runner.Job{Name: "parented", Argv: []string{"nproc"},
		Limits: runner.Limits{CPUs: 1, MemLimitBytes: 128 << 20}})
	if res.ExitCode != 0 || strings.TrimSpace(out) != "1" {
		t.Errorf("result %+v, nproc %q; want 1", res, out)
	}
	for c, p := range paths {
		if filepath.Base(filepath.Dir(p)) != strings.TrimPrefix(parent, "/") {
			t.Errorf("%s cgroup %s is not under %s", c, p, parent)
		}
	}
}

// A job running as root that moves a daemon of its own out of its cgroup
// (into the root cgroup of every hierarchy) and exits: the daemon, a
// double-forked sleep that ignores TERM and HUP, is killed when the job
// ends, and the Result names it.
func TestLocal_ProcessThatLeftTheCgroupIsKilled(t *testing.T) {
	r := newRunner(t, local.Options{})
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	script := `(trap '' TERM HUP; sleep 300 & echo $! > "$1"; for c in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
	[ -f "$c/cgroup.procs" ] && echo $! > "$c/cgroup.procs" 2>/dev/null; done) &
wait`
	res, _, _ := run(t, r, runner.Job{Name: "escape", Argv: []string{"/bin/sh", "-c", script, "sh", pidFile}})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("daemon pid %q", b)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the daemon %d that left the job's cgroup outlived the job", pid)
	}
	if len(res.Escaped) != 1 || !strings.HasPrefix(res.Escaped[0], strconv.Itoa(pid)+" (sleep)") {
		t.Errorf("Result.Escaped = %q, want the daemon %d (sleep)", res.Escaped, pid)
	}
}
