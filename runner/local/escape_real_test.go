package local_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/owner"
)

// moveDaemon is a job that double-forks a sleep ignoring TERM and HUP,
// writes its PID to $1, makes the cgroup $2 names (a path relative to each
// hierarchy the job is in, "@" standing for the job's own cgroup there, or
// "/" for the hierarchy's root), moves the sleep into it, writes the
// sleep's /proc/PID/cgroup to $3 and exits.
const moveDaemon = `(trap '' TERM HUP; sleep 300 & d=$!; echo $d > "$1"
while IFS=: read -r id ctl p; do
	case "$ctl" in name=*) continue;; esac
	m=/sys/fs/cgroup/$ctl
	if [ -z "$ctl" ]; then m=/sys/fs/cgroup/unified; [ -f "$m/cgroup.procs" ] || m=/sys/fs/cgroup; fi
	[ -f "$m/cgroup.procs" ] || continue
	case "$p" in */synergy-test-*) ;; *) continue;; esac
	case "$2" in @*) t="$m$p${2#@}"; base="$m$p";; *) t="$m$2"; base="$m";; esac
	mkdir -p "$t" 2>/dev/null
	for f in cpuset.cpus cpuset.mems; do
		[ -f "$base/$f" ] || continue
		x=$base; for s in $(echo "${t#$base}" | tr / ' '); do x=$x/$s; cat "$base/$f" > "$x/$f"; done
	done
	echo $d > "$t/cgroup.procs"
done < /proc/self/cgroup
cat /proc/$d/cgroup > "$3") &
wait`

// TestLocal_DaemonMovedBelowOrBesideItsCgroupIsKilled: a job running as
// root moves a daemon of its own into a sub-cgroup it makes below its job
// cgroup, or into a fresh cgroup named like a run's (after the runner
// itself, or after PID 1, which is alive and no runner), and exits. The
// daemon dies with the job, the Result names it, and no cgroup is left:
// not the job's, not the sub-cgroups, not the decoy.
func TestLocal_DaemonMovedBelowOrBesideItsCgroupIsKilled(t *testing.T) {
	r := newRunner(t, local.Options{})
	me, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	initID, err := owner.Of("/proc", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, want string
	}{
		{"sub-cgroup", "@/sub/deeper", "in sub-cgroup sub/deeper"},
		{"named after the runner", fmt.Sprintf("/synergy-test-decoy-%s-99", me), ""},
		{"named after PID 1", fmt.Sprintf("/synergy-test-decoy-%s-1/inner", initID), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile, cgFile := filepath.Join(dir, "pid"), filepath.Join(dir, "cgroup")
			res, _, paths := run(t, r, runner.Job{Name: "escmove",
				Argv: []string{"/bin/sh", "-c", moveDaemon, "sh", pidFile, tc.target, cgFile}})
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid <= 0 {
				t.Fatalf("daemon pid %q", b)
			}
			cg, _ := os.ReadFile(cgFile)
			moved := strings.TrimSuffix(strings.TrimPrefix(tc.target, "@"), "/inner")
			if !strings.Contains(string(cg), moved) {
				t.Fatalf("the job did not move its daemon into %s: /proc/%d/cgroup was\n%s", tc.target, pid, cg)
			}
			if running(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the daemon %d, moved into %s, outlived the job", pid, tc.target)
			}
			if len(res.Escaped) != 1 || !strings.HasPrefix(res.Escaped[0], strconv.Itoa(pid)+" (sleep)") ||
				!strings.Contains(res.Escaped[0], tc.want) {
				t.Errorf("Result.Escaped = %q, want the daemon %d (sleep) %s", res.Escaped, pid, tc.want)
			}
			assertGone(t, paths)
			if !strings.HasPrefix(tc.target, "@") {
				for c, p := range paths {
					root := hierarchyRoot(p)
					decoy := filepath.Join(root, strings.TrimSuffix(tc.target, "/inner"))
					if _, err := os.Stat(decoy); err == nil {
						t.Errorf("%s: the decoy cgroup %s is still there", c, decoy)
						_ = os.Remove(filepath.Join(root, tc.target))
						_ = os.Remove(decoy)
					}
				}
			}
		})
	}
}

// hierarchyRoot is the mount point of the v1 hierarchy (or v2 root) that
// holds cgroup directory p.
func hierarchyRoot(p string) string {
	rest := strings.TrimPrefix(p, "/sys/fs/cgroup/")
	if i := strings.IndexByte(rest, '/'); i > 0 {
		first := rest[:i]
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", first, "cgroup.procs")); err == nil {
			return filepath.Join("/sys/fs/cgroup", first)
		}
	}
	return "/sys/fs/cgroup"
}

// TestReap_DecoyNamedAfterALiveProcess: a cgroup named like a job cgroup
// of a live process that does not hold it, with a process in it that does
// not descend from the named one (or named after PID 1), is a decoy:
// ReapOrphans kills what is in it, removes it and says so. The same name
// with only a descendant of the named process in it (a job of a live run
// of a synergy that holds no descriptors, the systemd driver's pin in the
// moment before its runner holds the scope) is left alone.
func TestReap_DecoyNamedAfterALiveProcess(t *testing.T) {
	r := newRunner(t, local.Options{})
	me, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	initID, err := owner.Of("/proc", 1)
	if err != nil {
		t.Fatal(err)
	}
	const ctl = "memory"
	root := filepath.Join("/sys/fs/cgroup", ctl)
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
		root = "/sys/fs/cgroup"
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			t.Skip("no memory hierarchy")
		}
	}
	unrelated := exec.Command("sleep", "300")
	if err := unrelated.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unrelated.Process.Kill(); _ = unrelated.Wait() })
	unrelatedID, err := owner.Of("/proc", unrelated.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		id    owner.ID
		decoy bool
		self  bool // the cgroup is named after the process hiding in it
	}{
		{"after PID 1", initID, true, false},
		{"after a live process it does not descend from", unrelatedID, true, false},
		{"after its parent", me, false, false},
		{"after the process inside it", owner.ID{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sleep := exec.Command("sleep", "300")
			if err := sleep.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
			if tc.self {
				if tc.id, err = owner.Of("/proc", sleep.Process.Pid); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(root, fmt.Sprintf("synergy-test-decoy-%s-%d", tc.id, os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(dir) })
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
				t.Fatal(err)
			}
			removed, err := r.ReapOrphans()
			if err != nil {
				t.Fatal(err)
			}
			var said string
			for _, d := range removed {
				if strings.HasPrefix(d, dir) {
					said = d
				}
			}
			_, statErr := os.Stat(dir)
			if !tc.decoy {
				if said != "" || statErr != nil || !running(sleep.Process.Pid) {
					t.Errorf("ReapOrphans removed %q (stat %v, sleep running %v); want it left alone", said, statErr, running(sleep.Process.Pid))
				}
				return
			}
			if !strings.Contains(said, "decoy") || !strings.Contains(said, strconv.Itoa(sleep.Process.Pid)) {
				t.Errorf("ReapOrphans said %q of the decoy (all: %q), want it named a decoy holding %d", said, removed, sleep.Process.Pid)
			}
			if statErr == nil {
				t.Errorf("decoy %s still there", dir)
			}
			done := make(chan struct{})
			go func() { _ = sleep.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Errorf("the process in the decoy survived ReapOrphans")
			}
		})
	}
}
