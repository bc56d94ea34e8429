package vmtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVM_PID1IsSystemd(t *testing.T) {
	vm := Need(t)
	if got := strings.TrimSpace(vm.Run(t, "cat", "/proc/1/comm")); got != "systemd" {
		t.Errorf("PID 1 of the VM is %q, want systemd", got)
	}
}

func TestVM_UnifiedHierarchyWithControllers(t *testing.T) {
	vm := Need(t)
	if got := strings.TrimSpace(vm.Run(t, "stat", "-fc", "%T", "/sys/fs/cgroup")); got != "cgroup2fs" {
		t.Fatalf("/sys/fs/cgroup in the VM is %q, want cgroup2fs", got)
	}
	have := strings.Fields(vm.Run(t, "cat", "/sys/fs/cgroup/cgroup.controllers"))
	for _, c := range []string{"cpu", "cpuset", "memory", "io"} {
		found := false
		for _, h := range have {
			found = found || h == c
		}
		if !found {
			t.Errorf("controller %s missing at the VM's root: cgroup.controllers = %q", c, have)
		}
	}
}

func TestVM_RepoMountedAtSamePath(t *testing.T) {
	vm := Need(t)
	path := filepath.Join(vm.RepoRoot, "go.mod")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := vm.Run(t, "cat", path); got != string(want) {
		t.Errorf("%s in the VM differs from the host's:\n%s", path, got)
	}
}

func TestVM_ExecQuotesArgumentsAndReturnsExitCode(t *testing.T) {
	vm := Need(t)
	// Each argument must arrive as one, unexpanded.
	if got, want := vm.Run(t, "printf", "[%s]", "a b", "$HOME", `'"`, "*", ""), `[a b][$HOME]['"][*][]`; got != want {
		t.Errorf("printf in the VM printed %q, want %q", got, want)
	}
	_, _, err := vm.Exec(t.Context(), "sh", "-c", "exit 3")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit 3 in the VM: err = %v, want exit status 3", err)
	}
}

func TestVM_ExecRunsInASessionScope(t *testing.T) {
	vm := Need(t)
	got := strings.TrimSpace(vm.Run(t, "cat", "/proc/self/cgroup"))
	if !strings.HasPrefix(got, "0::/user.slice/user-0.slice/session-") || !strings.HasSuffix(got, ".scope") {
		t.Errorf("/proc/self/cgroup of a command in the VM is %q, want 0::/user.slice/user-0.slice/session-N.scope", got)
	}
}
