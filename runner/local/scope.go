package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/synergy-sched/synergy/runner/owner"
)

// The systemd driver's layout. A scope unit needs a process when it is
// made, and systemd stops an empty scope and removes its cgroup at once,
// before the runner could read the job's final counters. So each job's
// scope holds two cgroups of the runner's own (the scope is delegated to
// it): "pin", with a pin process (the gate, never released) that keeps the
// scope alive until the runner has read and removed "job", and "job", made
// with the limits like any v2 job cgroup and entered by the job through
// CLONE_INTO_CGROUP:
//
//	/sys/fs/cgroup/synergy.slice/synergy-<job>-<PID>-<START>-<n>.scope/
//	    pin/   the pin process
//	    job/   the job, with the point's limits
//
// When the runner dies, the pin dies with it (parent-death signal), the
// scope empties and systemd removes it.
const (
	scopePinDir = "pin"
	scopeJobDir = "job"
)

// scope is a job's transient scope unit.
type scope struct {
	sd      *systemd
	unit    string
	dir     string // the scope's cgroup
	pin     *exec.Cmd
	release *os.File // the pin exits when this closes
}

// newScopeGroup makes the job's scope with its pin, and the job cgroup in
// it with the plan's limits.
func (r *Runner) newScopeGroup(jobName string, p plan) (group, error) {
	root := r.opts.CgroupRoot
	sc, err := r.startScope(jobName)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (group, error) { return nil, errors.Join(err, sc.remove()) }
	pinDir := filepath.Join(sc.dir, scopePinDir)
	if err := os.Mkdir(pinDir, 0o755); err != nil {
		return fail(fmt.Errorf("scope %s: %w", sc.unit, err))
	}
	if err := os.WriteFile(filepath.Join(pinDir, "cgroup.procs"), []byte(strconv.Itoa(sc.pin.Process.Pid)), 0); err != nil {
		return fail(fmt.Errorf("scope %s: move its pin process into %s: %w", sc.unit, pinDir, err))
	}
	res := v2Resources(p)
	need := res.EnabledControllers()
	if missing := missingFrom(controllersOf(sc.dir), need); len(missing) > 0 {
		return fail(fmt.Errorf("scope %s: systemd did not delegate the %s controller (cgroup.controllers of %s: %q)",
			sc.unit, strings.Join(missing, ", "), sc.dir, strings.Join(controllersOf(sc.dir), " ")))
	}
	if err := enableControllers(sc.dir, v2Needed(controllersOf(sc.dir))); err != nil {
		return fail(fmt.Errorf("scope %s: %w", sc.unit, err))
	}
	fillAccounting(res, sc.dir)
	g := &v2Group{dir: filepath.Join(sc.dir, scopeJobDir), scope: sc}
	rel, err := filepath.Rel(root, g.dir)
	if err != nil {
		return fail(err)
	}
	if _, err := cgroup2.NewManager(root, "/"+rel, res); err != nil {
		err = fmt.Errorf("create cgroup %s with limits: %w", g.dir, err)
		return nil, errors.Join(err, g.remove())
	}
	if err := g.hold(root); err != nil {
		return nil, errors.Join(err, g.remove())
	}
	return g, nil
}

// startScope starts the pin and a scope unit around it, named
// "<Prefix>-<job>-<owner>-<n>.scope" (runner/owner), in SystemdSlice.
func (r *Runner) startScope(jobName string) (*scope, error) {
	me, err := owner.Self()
	if err != nil {
		return nil, fmt.Errorf("name the job's scope after this process: %w", err)
	}
	sc := &scope{sd: &r.sd}
	if err := sc.startPin(r.opts.GatePath); err != nil {
		return nil, err
	}
	var lastErr error
	for range 20 {
		unit := fmt.Sprintf("%s-%s-%s-%d.scope", r.opts.Prefix, sanitizeName(jobName), me, r.seq.Add(1))
		cg, err := r.sd.startScope(unit, SystemdSlice, sc.pin.Process.Pid, "synergy job "+jobName)
		if err == nil {
			sc.unit, sc.dir = unit, filepath.Join(r.opts.CgroupRoot, path.Clean(cg))
			return sc, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "already exists") {
			break
		}
	}
	sc.stopPin()
	return nil, lastErr
}

// startPin starts the gate with a release pipe it never gets a byte from:
// it waits until the pipe closes, then exits.
func (sc *scope) startPin(gatePath string) error {
	relR, relW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create pin pipe: %w", err)
	}
	defer relR.Close()
	helloR, helloW, err := os.Pipe()
	if err != nil {
		relW.Close()
		return fmt.Errorf("create pin pipe: %w", err)
	}
	defer helloR.Close()
	cmd := exec.Command(gatePath, GateArg, "--", "synergy-scope-pin")
	cmd.Args[0] = "synergy-scope-pin"
	cmd.ExtraFiles = []*os.File{relR, helloW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = startOnLockedThread(cmd)
	helloW.Close()
	if err != nil {
		relW.Close()
		return fmt.Errorf("start the scope's pin process %s: %w", gatePath, err)
	}
	sc.pin, sc.release = cmd, relW
	markStarted(cmd.Process.Pid)
	if err := awaitGateHello(helloR, "pin process", gatePath); err != nil {
		sc.stopPin()
		return err
	}
	return nil
}

// stopPin lets the pin exit and reaps it (SIGKILL after pinExitTimeout).
func (sc *scope) stopPin() {
	if sc.pin == nil {
		return
	}
	sc.release.Close()
	done := make(chan struct{})
	go func() { _ = sc.pin.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pinExitTimeout):
		_ = sc.pin.Process.Signal(syscall.SIGKILL)
		<-done
	}
	unmarkStarted(sc.pin.Process.Pid)
	sc.pin = nil
}

const pinExitTimeout = 5 * time.Second

// remove ends the pin, stops the scope unit and removes what is left of
// its cgroup (systemd removes it as the scope stops).
func (sc *scope) remove() error {
	sc.stopPin()
	if sc.unit == "" {
		return nil
	}
	var errs []error
	// The pin is reaped, so the scope is empty and systemd is stopping it
	// and removing its cgroups, racing these removals (which tolerate a
	// cgroup gone or going).
	if err := removeSubtree(filepath.Join(sc.dir, scopePinDir)); err != nil {
		errs = append(errs, err)
	}
	if err := sc.sd.stopUnit(sc.unit); err != nil {
		errs = append(errs, err)
	}
	// with any cgroup the job made in the scope beside "job" and "pin"
	if err := removeSubtree(sc.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// fillAccounting asks for accounting of the controllers parent already
// gives its children where the plan leaves them alone, so that every
// counter is there (an unlimited point still reports memory and CPU).
func fillAccounting(res *cgroup2.Resources, parent string) {
	delegated := strings.Fields(readString(filepath.Join(parent, "cgroup.subtree_control")))
	if res.Memory == nil && slices.Contains(delegated, "memory") {
		res.Memory = &cgroup2.Memory{}
	}
	if res.IO == nil && slices.Contains(delegated, "io") {
		res.IO = &cgroup2.IO{}
	}
	if res.CPU == nil && slices.Contains(delegated, "cpu") {
		res.CPU = &cgroup2.CPU{}
	}
}

// stopEmptySlice stops SystemdSlice when no scope is left in it, so that a
// run leaves no unit behind; a slice in use is left alone.
func (r *Runner) stopEmptySlice() error {
	dir := filepath.Join(r.opts.CgroupRoot, SystemdSlice)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return nil
		}
	}
	if pids, _ := readProcs(dir); len(pids) > 0 {
		return nil
	}
	return r.sd.stopUnit(SystemdSlice)
}
