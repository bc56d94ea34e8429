package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func TestChooseDriver(t *testing.T) {
	tests := []struct {
		want, mode string
		booted     bool
		got, err   string
	}{
		{want: "", mode: cgroupfs.ModeV2, booted: true, got: DriverSystemd},
		{want: DriverAuto, mode: cgroupfs.ModeV2, booted: true, got: DriverSystemd},
		{want: DriverAuto, mode: cgroupfs.ModeV2, booted: false, got: DriverCgroupfs},
		{want: DriverAuto, mode: cgroupfs.ModeHybrid, booted: true, got: DriverCgroupfs},
		{want: DriverCgroupfs, mode: cgroupfs.ModeV2, booted: true, got: DriverCgroupfs},
		{want: DriverSystemd, mode: cgroupfs.ModeV2, booted: true, got: DriverSystemd},
		{want: DriverSystemd, mode: cgroupfs.ModeHybrid, booted: true, err: "needs cgroup v2 (unified), and this host's cgroups are hybrid"},
		{want: DriverSystemd, mode: cgroupfs.ModeV2, booted: false, err: "needs systemd as PID 1"},
		{want: "runc", mode: cgroupfs.ModeV2, err: `cgroup driver "runc" is not one of auto, systemd, cgroupfs`},
	}
	for _, tt := range tests {
		got, err := chooseDriver(tt.want, tt.mode, tt.booted)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("chooseDriver(%q, %s, booted=%v) = %q, %v; want an error containing %q", tt.want, tt.mode, tt.booted, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.got {
			t.Errorf("chooseDriver(%q, %s, booted=%v) = %q, %v; want %q", tt.want, tt.mode, tt.booted, got, err, tt.got)
		}
	}
}

// fakeV2 writes a cgroup v2 tree of plain files: each path maps to its
// cgroup.controllers. (Plain files take any subtree_control write, so
// these tests check the choice of place, not the kernel's rules; the VM
// tests check those.)
func fakeV2(t *testing.T, tree map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, ctl := range tree {
		d := filepath.Join(root, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.controllers"), []byte(ctl+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The GPU server's shape: the caller's cgroup offers memory only, its
// parent everything. The parent gets synergy/, the caller's own cgroup is
// left alone.
func TestV2ParentFor_NearestAncestorWithControllers(t *testing.T) {
	all := "cpuset cpu io memory hugetlb pids"
	root := fakeV2(t, map[string]string{"/": all, "/process_api": all, "/process_api/42": "memory"})
	p, err := v2ParentFor(root, "/process_api/42", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Rel != "/process_api/synergy" || !p.Made {
		t.Errorf("parent = %+v, want /process_api/synergy made by the runner", p)
	}
	got := readString(filepath.Join(root, "process_api", "cgroup.subtree_control"))
	for _, c := range []string{"+cpu", "+cpuset", "+memory", "+io"} {
		if !strings.Contains(got, c) {
			t.Errorf("/process_api/cgroup.subtree_control got %q, want %s in it", got, c)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "process_api", "42", "cgroup.subtree_control")); err == nil {
		t.Error("the caller's own cgroup was written to")
	}
	if _, err := os.Stat(filepath.Join(root, "process_api", "synergy")); err != nil {
		t.Errorf("synergy/ not made: %v", err)
	}
}

func TestV2ParentFor_RootCaller(t *testing.T) {
	root := fakeV2(t, map[string]string{"/": "cpuset cpu memory pids"})
	p, err := v2ParentFor(root, "/", "")
	if err != nil || p.Rel != "/synergy" {
		t.Fatalf("parent = %+v, %v; want /synergy", p, err)
	}
	// The host has no io controller: it is not asked for.
	if got := readString(filepath.Join(root, "cgroup.subtree_control")); strings.Contains(got, "io") {
		t.Errorf("root subtree_control got %q, asked for io the host lacks", got)
	}
}

func TestV2ParentFor_GivenParent(t *testing.T) {
	all := "cpuset cpu io memory"
	root := fakeV2(t, map[string]string{"/": all, "/mine": all})
	p, err := v2ParentFor(root, "/user.slice/session-1.scope", "/mine/jobs")
	if err != nil || p.Rel != "/mine/jobs" || p.Made {
		t.Fatalf("parent = %+v, %v; want /mine/jobs, not the runner's to remove", p, err)
	}
	for _, d := range []string{"mine", "mine/jobs"} {
		if got := readString(filepath.Join(root, d, "cgroup.subtree_control")); !strings.Contains(got, "+cpuset") {
			t.Errorf("%s/cgroup.subtree_control = %q, want the controllers enabled", d, got)
		}
	}
}

// The caller's parent offers memory only and the root's subtree_control
// cannot be written (a cgroup namespace's root, here a directory in its
// place): nowhere to go, and the error says where it looked, which
// controllers and which flag.
func TestV2ParentFor_NowhereNamesPathsControllersAndFlag(t *testing.T) {
	root := fakeV2(t, map[string]string{"/": "cpu cpuset memory pids", "/a": "memory", "/a/b": "memory"})
	if err := os.Mkdir(filepath.Join(root, "cgroup.subtree_control"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := v2ParentFor(root, "/a/b", "")
	if err == nil {
		t.Fatal("no error where no cgroup can give cpu")
	}
	for _, want := range []string{"cpu, cpuset, memory", filepath.Join(root, "a") + ": the cpu, cpuset controller is not available",
		root + ": enable +cpu +cpuset +memory", "--cgroup-parent", "systemd driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), filepath.Join(root, "a", "b")+":") {
		t.Errorf("error %q tried the caller's own cgroup, which holds processes", err)
	}
}
