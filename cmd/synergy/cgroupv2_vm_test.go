package main

// End-to-end tests on a cgroup v2 host booted with systemd: the KVM VM of
// scripts/local-vm.sh (internal/vmtest; skipped without it, failed under
// SYNERGY_REQUIRE=cgroupv2). synergy profile runs there from the places a
// GPU server's users start it: a root login session, a systemd service,
// and a shell in a nested cgroup that delegates only memory (the shape of
// the first GPU server synergy met, docs/host-safety.md). Every cell must
// be measured under exactly its limits, as the job itself reads them from
// its own cgroup, and nothing may be left after, nor after kill -9.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/internal/vmtest"
	"github.com/synergy-sched/synergy/sensitivity"
)

// vmWork is the VM's own scratch directory, on its block device (/dev/vda),
// so that io.max can throttle the dataset's reads.
const vmWork = "/var/tmp/synergy-vmtest"

// vmReadBPS throttles the dataset's disk in the VM's profiles.
const vmReadBPS = 20_000_000

// jobCgroupScript is the job the VM's profiles run: it prints its own
// cgroup and the limit files there, then runs synthtrain with the contract
// flags the profiler appended.
const jobCgroupScript = `#!/bin/sh
cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
echo "vmtest-cgroup path=$cg"
for f in cpuset.cpus.effective cpu.max memory.max io.max; do
	echo "vmtest-cgroup $f=$(tr '\n' ' ' < /sys/fs/cgroup$cg/$f | sed 's/ *$//')"
done
exe=$1
shift
exec "$exe" "$@"
`

// vmSetup is what every VM profile shares: the programs (in a directory
// of the repository, which the VM mounts at the same path) and a dataset
// on the VM's disk.
type vmSetup struct {
	vm                         *vmtest.VM
	synergy, synthtrain, jobSh string
}

func setUpVM(t *testing.T) *vmSetup {
	t.Helper()
	vm := vmtest.Need(t)
	b := buildBinaries(t)
	dir, err := os.MkdirTemp(vm.RepoRoot, ".vmtest-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &vmSetup{vm: vm, synergy: filepath.Join(dir, "synergy"), synthtrain: filepath.Join(dir, "synthtrain"),
		jobSh: filepath.Join(dir, "job.sh")}
	for src, dst := range map[string]string{b.synergy: s.synergy, b.synthtrain: s.synthtrain} {
		body, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, body, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(s.jobSh, []byte(jobCgroupScript), 0o755); err != nil {
		t.Fatal(err)
	}
	vm.Run(t, "sh", "-c", `set -e; mkdir -p "$1"; rm -rf "$1"/*.json "$1"/*.logs "$1"/*.timeline; test -d "$1/data8" || "$2" gen --dir "$1/data8" --bytes 8MiB --preset image --seed 1 >/dev/null`,
		"sh", vmWork, s.synthtrain)
	s.assertClean(t, "before the test")
	return s
}

// profileArgs are synergy profile's arguments for a 2 CPU counts × (one
// memory limit + unlimited) grid of the image preset, every cell measured.
func (s *vmSetup) profileArgs(name string, extra ...string) []string {
	args := []string{s.synergy, "profile", "--strategy", "grid", "--cpus", "1,2", "--mem-limits", "64MiB",
		"--disk-read-bps", fmt.Sprint(vmReadBPS), "--stall-breakdown=false", "-b", "8", "--data", vmWork + "/data8",
		"--max-iterations", "24", "--min-iterations", "10", "--warmup", "2", "--point-timeout", "120s",
		"--job-name", name, "--out", vmWork + "/" + name + ".json"}
	args = append(args, extra...)
	return append(args, "--", "/bin/sh", s.jobSh, s.synthtrain, "--preset", "image")
}

// leftovers lists the synergy units, cgroups and processes left in the VM.
func (s *vmSetup) leftovers(ctx context.Context) (string, error) {
	out, _, err := s.vm.Exec(ctx, "sh", "-c", `systemctl list-units --all --plain --no-legend 'synergy-*.scope' 'synergy.slice'
find /sys/fs/cgroup -name 'synergy*' -type d
pgrep -a -x synthtrain
pgrep -a -x synergy
true`)
	return strings.TrimSpace(string(out)), err
}

func (s *vmSetup) assertClean(t *testing.T, when string) {
	t.Helper()
	left, err := s.leftovers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if left != "" {
		t.Fatalf("left in the VM %s:\n%s", when, left)
	}
}

var cgroupLine = regexp.MustCompile(`(?m)^vmtest-cgroup ([a-z.]+)=(.*)$`)

// checkProfile checks the profile the VM wrote for name: every cell of
// the grid measured in one launch, changed in place; the launch's job in
// its own cgroup under wantPath with exactly its first point's limits, as
// it read them at its start; and every later point's limits in force as
// the job's cgroup counted it: the CPU-bound image job on the cores each
// point allows, and a limited point's memory within its limit. It returns
// how well the job turned the cores it used into samples; the caller holds
// that to its bar over every place (checkCoreScaling): one pair of points
// on a host whose pace moves does not decide it.
func (s *vmSetup) checkProfile(t *testing.T, name string, wantPath *regexp.Regexp) coreScaling {
	t.Helper()
	var p sensitivity.Profile
	if err := json.Unmarshal([]byte(s.vm.Run(t, "cat", vmWork+"/"+name+".json")), &p); err != nil {
		t.Fatalf("profile: %v", err)
	}
	if len(p.Cells) != 4 || len(p.MeasuredOK()) != 4 {
		t.Fatalf("profile has %d cells, %d measured; want the 2×2 grid measured", len(p.Cells), len(p.MeasuredOK()))
	}
	if p.Cost.Launches != 1 || len(p.Cost.Relaunches) != 0 {
		t.Errorf("%d launches (relaunches %q), want the 2×2 grid in one", p.Cost.Launches, p.Cost.Relaunches)
	}
	rate, cores := map[float64]float64{}, map[float64]float64{}
	for _, c := range p.Cells {
		if c.MemLimitBytes == 0 {
			rate[c.CPUs], cores[c.CPUs] = c.SamplesPerS, c.Stats.CPUCoresMean
		}
		if used := c.Stats.MemAnonBytes + c.Stats.MemCacheBytes; c.MemLimitBytes > 0 && (used <= 0 || used > c.MemLimitBytes) {
			t.Errorf("cell cpus=%g mem=%s: the job's cgroup held %d bytes, want within the limit", c.CPUs, units.FormatMemLimit(c.MemLimitBytes), used)
		}
		if c.Stats.InPlace {
			continue // the job read its cgroup's files at its start: checked at the launch's first point
		}
		log := s.vm.Run(t, "cat", fmt.Sprintf("%s/%s.logs/cpus%g-mem%s.log", vmWork, name, c.CPUs, units.FormatMemLimit(c.MemLimitBytes)))
		got := map[string]string{}
		for _, m := range cgroupLine.FindAllStringSubmatch(log, -1) {
			got[m[1]] = m[2]
		}
		want := map[string]string{
			"cpuset.cpus.effective": map[float64]string{1: "0", 2: "0-1"}[c.CPUs],
			"cpu.max":               fmt.Sprintf("%d 100000", int(c.CPUs*100000)),
			"memory.max":            "max",
		}
		if c.MemLimitBytes > 0 {
			want["memory.max"] = fmt.Sprint(c.MemLimitBytes)
		}
		for f, w := range want {
			if got[f] != w {
				t.Errorf("cell cpus=%g mem=%s: the job's %s = %q, want %q", c.CPUs, units.FormatMemLimit(c.MemLimitBytes), f, got[f], w)
			}
		}
		if io := got["io.max"]; !strings.Contains(io, fmt.Sprintf("rbps=%d ", vmReadBPS)) {
			t.Errorf("cell cpus=%g: the job's io.max = %q, want rbps=%d", c.CPUs, io, vmReadBPS)
		}
		if !wantPath.MatchString(got["path"]) {
			t.Errorf("cell cpus=%g: the job ran in cgroup %q, want one matching %s", c.CPUs, got["path"], wantPath)
		}
	}
	// The CPU-bound image job uses the cores its point gives it, as its
	// own cgroup counts them: never more than one at 1 core (the quota
	// and the one-CPU cpuset hold), well over one at 2; and it turns the
	// cores it got into samples: its samples/s grow by at least 0.8 of
	// the ratio of cores used (1.6x where it got 2 cores to 1; held over
	// every place by checkCoreScaling, returned from here). The VM
	// may be emulated (docs/vm.md): its two vCPUs are then two threads of
	// the host beside qemu's own, and the job gets about 1.5 of them at 2
	// cores (a PVM host, 2026-11-28), so the bar follows the cores used;
	// these tests run alone, after the rest of the suite (make test).
	if cores[1] <= 0 || cores[1] > 1.1 || cores[2] < 1.3 {
		t.Errorf("image job, memory unlimited: its cgroup used %.2f cores at 1 core and %.2f at 2; want at most 1.1 and at least 1.3",
			cores[1], cores[2])
	}
	sc := coreScaling{name: name, rate1: rate[1], rate2: rate[2], cores1: cores[1], cores2: cores[2]}
	t.Logf("%s; %s", sc, p.Host.CgroupPlacement)
	return sc
}

// coreScaling is the image job's memory-unlimited cells at 1 and 2 cores:
// its samples/s and the cores its cgroup counted it using.
type coreScaling struct {
	name                         string
	rate1, rate2, cores1, cores2 float64
}

// efficiency is the samples/s ratio over the ratio of cores used (1: every
// extra core used became samples); 0 when a cell is missing.
func (c coreScaling) efficiency() float64 {
	if c.rate1 <= 0 || c.cores1 <= 0 || c.cores2 <= 0 {
		return 0
	}
	return (c.rate2 / c.rate1) / (c.cores2 / c.cores1)
}

func (c coreScaling) String() string {
	return fmt.Sprintf("%s: 1 core %.1f samples/s on %.2f cores, 2 cores %.1f on %.2f (%.2fx, %.2f of the cores' ratio)",
		c.name, c.rate1, c.cores1, c.rate2, c.cores2, c.rate2/c.rate1, c.efficiency())
}

// checkCoreScaling holds the image job to turning at least 0.8 of the
// cores it used into samples/s, in all places but one at most: its two
// cells run minutes apart, and this host's CPU pace moves up to 2× in
// that time (is the host busy beside the VM?). A cgroup that counted
// cores the job did not get fails every place.
func checkCoreScaling(t *testing.T, places []coreScaling) {
	t.Helper()
	if len(places) == 0 {
		return // every place failed before its profile was read, and said why
	}
	var short []string
	for _, p := range places {
		if p.efficiency() < 0.8 {
			short = append(short, p.String())
		}
	}
	if len(short) > 1 || len(short) == len(places) {
		t.Errorf("image job, memory unlimited: %d of %d places turned under 0.8 of the cores used into samples/s (want at most one, and not every place): %s",
			len(short), len(places), strings.Join(short, "; "))
	}
}

var (
	scopeJob    = regexp.MustCompile(`^/synergy\.slice/synergy-[^/]+-\d+-\d+-\d+\.scope/job$`)
	nestedJob   = regexp.MustCompile(`^/process_api/synergy/synergy-[^/]+-\d+-\d+-\d+$`)
	vmProfileTO = 6 * time.Minute
)

// nestedShell runs args from a shell moved into /process_api/7, a cgroup
// whose parent gives it only the memory controller, while the root gives
// its children every controller, as on the GPU server.
func nestedShell(args ...string) []string {
	return append([]string{"sh", "-c", `set -e
echo "+cpuset +cpu +io +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
d=/sys/fs/cgroup/process_api
mkdir -p $d/7
echo +memory > $d/cgroup.subtree_control
test "$(cat $d/7/cgroup.controllers)" = memory
echo $$ > $d/7/cgroup.procs
"$@" && rc=0 || rc=$?
echo $$ > /sys/fs/cgroup/cgroup.procs
for i in $(seq 100); do rmdir $d/7 $d 2>/dev/null && break; sleep 0.3; done
exit $rc`, "sh"}, args...)
}

func TestCgroupV2VM_ProfileFromEachPlace(t *testing.T) {
	s := setUpVM(t)
	places := []struct {
		name     string
		run      func(args []string) []string
		extra    []string
		wantPath *regexp.Regexp
	}{
		{name: "session", run: func(a []string) []string { return a }, wantPath: scopeJob},
		{name: "service", run: func(a []string) []string {
			return append([]string{"systemd-run", "--wait", "--pipe", "--quiet", "--collect", "--unit", "vmtest-profile"}, a...)
		}, wantPath: scopeJob},
		{name: "nested", run: func(a []string) []string { return nestedShell(a...) }, wantPath: scopeJob},
		{name: "nestedfs", run: func(a []string) []string { return nestedShell(a...) }, extra: []string{"--cgroup-driver", "cgroupfs"}, wantPath: nestedJob},
	}
	var scaling []coreScaling
	for _, pl := range places {
		t.Run(pl.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), vmProfileTO)
			defer cancel()
			out, errOut, err := s.vm.Exec(ctx, pl.run(s.profileArgs("vm"+pl.name, pl.extra...))...)
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
			scaling = append(scaling, s.checkProfile(t, "vm"+pl.name, pl.wantPath))
			s.assertClean(t, "after the profile")
		})
	}
	checkCoreScaling(t, scaling)
}

// TestCgroupV2VM_KillMinus9LeavesNothing kills synergy with SIGKILL while a
// point runs, under each driver: its watchdog, the jobs' parent-death
// signal and systemd must leave no scope, cgroup or process behind.
func TestCgroupV2VM_KillMinus9LeavesNothing(t *testing.T) {
	s := setUpVM(t)
	for _, driver := range []string{"systemd", "cgroupfs"} {
		t.Run(driver, func(t *testing.T) {
			name := "vmkill" + driver
			script := `"$@" >` + vmWork + `/kill.log 2>&1 &
pid=$!
for i in $(seq 600); do
	find /sys/fs/cgroup -path '*synergy*' -name 'synergy-*' -type d | grep -q . && break
	sleep 0.1
done
sleep 1
find /sys/fs/cgroup -path '*synergy*' -name 'synergy-*' -type d
kill -9 $pid
wait $pid || true`
			args := append([]string{"sh", "-c", script, "sh"}, s.profileArgs(name, "--cgroup-driver", driver)...)
			out, errOut, err := s.vm.Exec(t.Context(), nestedShell(args...)...)
			if err != nil || !strings.Contains(string(out), "synergy-") {
				t.Fatalf("no job cgroup seen before kill -9 (%v)\n%s\n%s", err, out, errOut)
			}
			deadline := time.Now().Add(30 * time.Second)
			var left string
			for time.Now().Before(deadline) {
				if left, err = s.leftovers(t.Context()); err == nil && left == "" {
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
			t.Errorf("30 s after kill -9 of synergy (%s driver), still in the VM:\n%s", driver, left)
		})
	}
}
