package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
)

// Feature is the name SYNERGY_REQUIRE gives the VM.
const Feature = "cgroupv2"

// script is the VM's control script, relative to the repository root.
const script = "scripts/local-vm.sh"

// VM is the running VM of scripts/local-vm.sh.
type VM struct {
	// RepoRoot is the repository's root on the host, mounted at the same
	// path in the VM.
	RepoRoot string
}

// Need returns the running VM, or skips the test (fails it under
// SYNERGY_REQUIRE=cgroupv2) with the reason `local-vm.sh status` gives.
func Need(t testing.TB) *VM {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		testreq.Skip(t, Feature, err.Error())
	}
	vm := &VM{RepoRoot: root}
	if out, err := exec.CommandContext(t.Context(), vm.script(), "status").CombinedOutput(); err != nil {
		testreq.Skip(t, Feature, fmt.Sprintf("%s (%v); start it with %s start", bytes.TrimSpace(out), err, script))
	}
	return vm
}

// Exec runs args in the VM as root, each argument arriving as given, and
// returns its stdout and stderr. A command that exits non-zero gives an
// *exec.ExitError (wrapped) with its exit code; 255 means ssh failed.
func (vm *VM) Exec(ctx context.Context, args ...string) (stdout, stderr []byte, err error) {
	if len(args) == 0 {
		return nil, nil, errors.New("vm exec: no command")
	}
	cmd := exec.CommandContext(ctx, vm.script(), append([]string{"exec"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.Bytes(), errOut.Bytes(), fmt.Errorf("in the VM: %q: %w", args, err)
	}
	return out.Bytes(), errOut.Bytes(), nil
}

// Run runs args in the VM and returns its stdout; a failure fails the test
// with the command's stderr.
func (vm *VM) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, err := vm.Exec(t.Context(), args...)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, errOut)
	}
	return string(out)
}

func (vm *VM) script() string { return filepath.Join(vm.RepoRoot, script) }

// repoRoot is the first directory at or above the working directory (a
// test's package directory) that holds the script, else git's top level.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", script, err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, script)); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("no %s at or above %s, and git rev-parse --show-toplevel: %w", script, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
