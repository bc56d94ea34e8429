package local

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// Which processes are inside a live job of this process is decided by
// exact paths: a name that merely contains the runner's owner, or a
// prefix of a job's name, is outside.
func TestWithin(t *testing.T) {
	jobs := map[string]int{"/p/synergy-a-1-2-3": 1, "/synergy.slice/synergy-b-1-2-4.scope": 1}
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/p/synergy-a-1-2-3", true},
		{"/p/synergy-a-1-2-3/sub/deeper", true},
		{"/p/synergy-a-1-2-3/", true},
		{"/synergy.slice/synergy-b-1-2-4.scope/job", true},
		{"/p/synergy-a-1-2-30", false},        // a longer name that starts alike
		{"/synergy-a-1-2-3", false},           // the same name elsewhere
		{"/p/x/synergy-a-1-2-3", false},       // ... or deeper
		{"/p/synergy-a-1-2-3/../evil", false}, // cleaned before comparing
		{"/", false},
		{"/p", false},
	} {
		if got := within(tc.p, jobs); got != tc.want {
			t.Errorf("within(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestOutsideLiveJobs_OnlyHierarchiesWithAJob(t *testing.T) {
	done := registerJob(map[string]string{"memory": "/p/synergy-a-1-2-3", "cpu": "/synergy-a-1-2-3"})
	defer done()
	m, err := cgroupfs.ParseProcCgroup([]byte("12:memory:/p/synergy-a-1-2-3/sub\n11:cpu,cpuacct:/\n10:pids:/x\n1:name=systemd:/y\n0::/z\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := outsideLiveJobs(membershipByKey(m))
	if len(got) != 1 || got["cpu"] != "/" {
		t.Errorf("outside = %v, want only cpu (/): memory is inside, pids and unified have no live job", got)
	}
	done()
	done() // idempotent
	if got := outsideLiveJobs(membershipByKey(m)); len(got) != 0 {
		t.Errorf("after the job ended, outside = %v, want none", got)
	}
}

// descendants lists a whole tree once, even if the parent map has a cycle
// (PIDs reused while /proc was read).
func TestDescendants(t *testing.T) {
	kids := map[int][]int{10: {11, 12}, 11: {13}, 13: {10}, 12: {14}, 99: {100}}
	got := descendants(kids, 10)
	slices.Sort(got)
	if !slices.Equal(got, []int{10, 11, 12, 13, 14}) {
		t.Errorf("descendants = %v", got)
	}
}

func TestParseStat_HostileComm(t *testing.T) {
	rest := " S 42 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 100 1 2 3"
	p, ok := parseStat("123 (a) b (c) ) d)" + rest)
	if !ok || p.comm != "a) b (c) ) d" || p.ppid != 42 || p.start != 777 || p.state != "S" {
		t.Errorf("parseStat = %+v, %v", p, ok)
	}
	for _, bad := range []string{"", "123 no parens", "123 (x) S notanumber" + rest[4:], "123 (x) S 1 2"} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestRunNamed(t *testing.T) {
	for _, tc := range []struct {
		base string
		ok   bool
	}{
		{"synergy-job-12-34-5", true},
		{"synergy-job-12-34-5.scope", true},
		{"synergy-a-b-c-12-34-5", true},
		{"synergyx-job-12-34-5", false},
		{"other-job-12-34-5", false},
		{"synergy-job-12-34", false},
		{"synergy-job-12-x-5", false},
	} {
		if _, ok := runNamed(tc.base, "synergy"); ok != tc.ok {
			t.Errorf("runNamed(%q) = %v, want %v", tc.base, ok, tc.ok)
		}
	}
}

func TestQuoteName_EscapesAndBounds(t *testing.T) {
	for in, want := range map[string]string{
		"sleep":          "sleep",
		"a\x1b[2Jb":      `"a\x1b[2Jb"`,
		"evil\u202etxt":  `"evil\u202etxt"`,
		"with space":     `"with space"`,
		"sub/deeper":     "sub/deeper",
		"caf\u00e9":      "caf\u00e9",
		"nl\nnext":       `"nl\nnext"`,
		"back\\slash":    `"back\\slash"`,
		"\xff\xfe bytes": `"\xff\xfe bytes"`,
	} {
		if got := quoteName(in); got != want {
			t.Errorf("quoteName(%q) = %s, want %s", in, got, want)
		}
	}
	long := quoteName(strings.Repeat("x", 7<<20))
	if len(long) > nameMax+10 || !strings.HasSuffix(long, "...") {
		t.Errorf("a 7 MB name came out %d bytes long", len(long))
	}
}

// subtreeDirs lists a tree deepest first, a missing top as empty, and
// refuses more than subtreeMaxDirs below one job.
func TestSubtreeDirs(t *testing.T) {
	top := t.TempDir()
	for _, d := range []string{"a/b/c", "a/d", "e"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := subtreeDirs(top)
	if err != nil || len(got) != 6 || got[0] != filepath.Join(top, "a/b/c") || got[5] != top {
		t.Errorf("subtreeDirs = %q, %v", got, err)
	}
	if got, err := subtreeDirs(filepath.Join(top, "missing")); err != nil || len(got) != 0 {
		t.Errorf("missing top: %q, %v", got, err)
	}
}

// A list that failed in part (a job that made more cgroups than are looked
// at) still names processes: they are killed, and the error is returned.
// Before, the first error returned before any signal was sent.
func TestKillUntilEmpty_KillsWhatAPartialListNames(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	tooMany := errors.New("cgroup x: more than 10000 cgroups below it")
	var exited atomic.Bool
	list := func() ([]int, error) {
		if exited.Load() {
			return nil, tooMany
		}
		return []int{cmd.Process.Pid}, tooMany
	}
	go func() { <-done; exited.Store(true) }()
	err := killUntilEmpty(list)
	if !errors.Is(err, tooMany) {
		t.Errorf("err = %v, want the list's error", err)
	}
	if !exited.Load() {
		t.Error("the listed process was not killed")
	}
}
