package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/runner/owner"
)

// Options configure a Runner. Every host path is injectable; zero values
// take the defaults.
type Options struct {
	// CgroupRoot is where cgroup file systems are mounted (/sys/fs/cgroup).
	CgroupRoot string
	// ProcRoot is the proc file system (/proc); the parent cgroups come
	// from <ProcRoot>/self/cgroup and the mode from <ProcRoot>/self/mounts.
	ProcRoot string
	// SysRoot is the sysfs mount (/sys), used to map a partition to its
	// disk for read throttling.
	SysRoot string
	// Parent is the cgroup path, relative to each hierarchy's root, under
	// which job cgroups are made ("/synergy"). Empty: under the caller's
	// own cgroup in each hierarchy; where that directory is not visible
	// (a container without a cgroup namespace), the hierarchy's root.
	Parent string
	// Prefix starts every job cgroup's name ("synergy").
	Prefix string
	// Mode forces "v1", "hybrid" or "v2"; empty detects it
	// (cgroupfs.DetectMode).
	Mode string
	// GatePath is the executable started as "<GatePath> __synergy-gate --
	// argv..." on v1, and as the scope's pin under the systemd driver (see
	// GateMain); empty is os.Executable().
	GatePath string
	// Driver is who makes job cgroups on a v2 host: DriverAuto (""),
	// DriverSystemd or DriverCgroupfs (see driver.go). v1 and hybrid hosts
	// use cgroupfs.
	Driver string
	// ReapOnly makes a runner that only reaps orphans (ReapOrphans): New
	// then creates nothing on the host and connects to nothing.
	ReapOnly bool
}

// Runner starts jobs in fresh cgroups on this host. It is safe for
// concurrent use.
type Runner struct {
	opts Options
	mode string
	// ctl maps each usable controller ("cpuset", "cpu", "cpuacct",
	// "memory", "blkio"; "unified" on v2) to its hierarchy root and the
	// parent path inside it.
	ctl map[string]hierarchy
	seq atomic.Uint64
	// driver is DriverSystemd or DriverCgroupfs; note says why auto chose
	// it when that is not obvious.
	driver, note string
	sd           systemd
	// v2Parent is the cgroupfs driver's parent on v2 (Rel "" otherwise).
	v2Parent v2Parent
}

// hierarchy is where one controller's job cgroups go.
type hierarchy struct {
	Root   string // mount point, e.g. /sys/fs/cgroup/memory
	Parent string // path inside it, e.g. /process_api/<id>
}

func (h hierarchy) dir(name string) string { return filepath.Join(h.Root, h.Parent, name) }

// v1Controllers are the v1 controllers a job cgroup is made in (those
// mounted): limits need cpuset, cpu, memory and blkio; stats read cpuacct.
func v1Controllers() []string { return []string{"cpuset", "cpu", "cpuacct", "memory", "blkio"} }

var _ runner.Runner = (*Runner)(nil)

// New checks the host's cgroup layout and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = "/sys/fs/cgroup"
	}
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.SysRoot == "" {
		opts.SysRoot = "/sys"
	}
	if opts.Prefix == "" {
		opts.Prefix = "synergy"
	}
	if opts.Parent != "" && !strings.HasPrefix(opts.Parent, "/") {
		return nil, fmt.Errorf("local runner: parent cgroup %q must be an absolute path inside the hierarchy (\"/synergy\")", opts.Parent)
	}
	if !opts.ReapOnly {
		// Processes that leave a job's cgroup are caught as this
		// process's orphans (escape.go); without it they are not.
		_ = becomeSubreaper()
	}
	if opts.GatePath == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local runner: find own executable for the v1 gate: %w", err)
		}
		opts.GatePath = exe
	}
	mode := opts.Mode
	if mode == "" {
		mode = cgroupfs.DetectMode(opts.ProcRoot, opts.CgroupRoot)
	}
	r := &Runner{opts: opts, mode: mode, ctl: map[string]hierarchy{}}
	membership, err := r.readMembership()
	if err != nil {
		return nil, err
	}
	switch mode {
	case cgroupfs.ModeV1, cgroupfs.ModeHybrid:
		for _, c := range v1Controllers() {
			root := filepath.Join(opts.CgroupRoot, c)
			if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
				continue // controller not mounted
			}
			r.ctl[c] = r.hierarchyFor(root, membership.V1[c])
		}
		if len(r.ctl) == 0 {
			return nil, fmt.Errorf("local runner: cgroup %s mode, but none of %s is mounted under %s",
				mode, strings.Join(v1Controllers(), ", "), opts.CgroupRoot)
		}
	case cgroupfs.ModeV2:
		if err := r.setUpV2(membership.Unified); err != nil {
			return nil, fmt.Errorf("local runner: %w", err)
		}
	case cgroupfs.ModeNone:
		return nil, fmt.Errorf("local runner: no cgroup file system mounted under %s", opts.CgroupRoot)
	default:
		return nil, fmt.Errorf("local runner: cgroup mode %q is not one of v1, hybrid, v2", mode)
	}
	if r.driver == "" { // v1 or hybrid
		d, err := chooseDriver(opts.Driver, mode, systemdBooted())
		if err != nil {
			return nil, fmt.Errorf("local runner: %w", err)
		}
		r.driver = d
	}
	return r, nil
}

// setUpV2 chooses the driver on a v2 host and, unless ReapOnly, readies it:
// a connection to systemd, or the cgroupfs driver's parent (v2ParentFor).
// Under DriverAuto a systemd that does not answer falls back to cgroupfs.
func (r *Runner) setUpV2(own string) error {
	booted := systemdBooted()
	d, err := chooseDriver(r.opts.Driver, cgroupfs.ModeV2, booted)
	if err != nil {
		return err
	}
	if d == DriverSystemd && r.opts.Parent != "" {
		return fmt.Errorf("a parent cgroup (%s) is for the %s driver; the %s driver puts each job in a scope in %s",
			r.opts.Parent, DriverCgroupfs, DriverSystemd, SystemdSlice)
	}
	if d == DriverSystemd && !r.opts.ReapOnly {
		ctx, cancel := context.WithTimeout(context.Background(), systemdTimeout)
		_, err := r.sd.get(ctx)
		cancel()
		if err != nil {
			if r.opts.Driver == DriverSystemd {
				return fmt.Errorf("the %s cgroup driver: %w", DriverSystemd, err)
			}
			r.note = fmt.Sprintf("systemd is PID 1 but does not answer (%v): using the %s driver", err, DriverCgroupfs)
			d = DriverCgroupfs
		}
	}
	r.driver = d
	if d == DriverSystemd {
		r.ctl[cgroupfs.KeyUnified] = hierarchy{Root: r.opts.CgroupRoot, Parent: "/" + SystemdSlice}
		return nil
	}
	if r.opts.ReapOnly {
		r.ctl[cgroupfs.KeyUnified] = r.hierarchyFor(r.opts.CgroupRoot, own)
		return nil
	}
	p, err := v2ParentFor(r.opts.CgroupRoot, own, r.opts.Parent)
	if err != nil {
		return err
	}
	r.v2Parent = p
	r.ctl[cgroupfs.KeyUnified] = hierarchy{Root: r.opts.CgroupRoot, Parent: p.Rel}
	return nil
}

// Close releases what the runner holds: the cgroupfs driver's own parent
// directory when no job is left in it, the systemd slice when no scope is
// left in it, and the connection to systemd. Jobs must have been waited on.
func (r *Runner) Close() error {
	var err error
	switch {
	case r.v2Parent.Made:
		if rerr := unix.Rmdir(r.ctl[cgroupfs.KeyUnified].dir("")); rerr != nil &&
			!errors.Is(rerr, unix.ENOENT) && !errors.Is(rerr, unix.EBUSY) && !errors.Is(rerr, unix.ENOTEMPTY) {
			err = fmt.Errorf("remove cgroup %s: %w", r.ctl[cgroupfs.KeyUnified].dir(""), rerr)
		}
	case r.driver == DriverSystemd && !r.opts.ReapOnly:
		err = r.stopEmptySlice()
	}
	r.sd.close()
	return err
}

// Driver is the cgroup driver in use: DriverSystemd or DriverCgroupfs.
func (r *Runner) Driver() string { return r.driver }

// Placement says where job cgroups go, for the profile's host record and
// messages: "v2, systemd driver: scopes in synergy.slice", "v2, cgroupfs
// driver: under /process_api/synergy", "hybrid, cgroupfs driver: under
// the caller's cgroups".
func (r *Runner) Placement() string {
	s := r.mode + ", " + r.driver + " driver: "
	switch {
	case r.driver == DriverSystemd:
		s += "a scope per job in " + SystemdSlice
	case r.mode == cgroupfs.ModeV2:
		s += "under " + r.ctl[cgroupfs.KeyUnified].Parent
	case r.opts.Parent != "":
		s += "under " + r.opts.Parent
	default:
		s += "under the caller's own cgroups"
	}
	if r.note != "" {
		s += " (" + r.note + ")"
	}
	return s
}

func (r *Runner) readMembership() (cgroupfs.Membership, error) {
	p := filepath.Join(r.opts.ProcRoot, "self", "cgroup")
	b, err := os.ReadFile(p)
	if err != nil {
		return cgroupfs.Membership{}, fmt.Errorf("local runner: read own cgroups: %w", err)
	}
	m, err := cgroupfs.ParseProcCgroup(b)
	if err != nil {
		return cgroupfs.Membership{}, fmt.Errorf("local runner: %s: %w", p, err)
	}
	return m, nil
}

// hierarchyFor picks the parent inside a hierarchy: Options.Parent, else
// the caller's own cgroup if visible there, else the root.
func (r *Runner) hierarchyFor(root, own string) hierarchy {
	if r.opts.Parent != "" {
		return hierarchy{Root: root, Parent: path.Clean(r.opts.Parent)}
	}
	if own == "" {
		own = "/"
	}
	if _, err := os.Stat(filepath.Join(root, own)); err != nil {
		own = "/"
	}
	return hierarchy{Root: root, Parent: path.Clean(own)}
}

// Name is "local".
func (r *Runner) Name() string { return "local" }

// Mode is the cgroup mode in use: "v1", "hybrid" or "v2".
func (r *Runner) Mode() string { return r.mode }

// Start creates the job's cgroup with its limits and starts the job in it.
func (r *Runner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	if len(job.Argv) == 0 || job.Argv[0] == "" {
		return nil, fmt.Errorf("start job %q: empty command", job.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start job %q: %w", job.Name, err)
	}
	if job.Dir != "" {
		if fi, err := os.Stat(job.Dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("start job %q: working directory %s is not a directory (%v)", job.Name, job.Dir, err)
		}
	}
	p, err := r.plan(job.Limits)
	if err != nil {
		return nil, fmt.Errorf("start job %q: %w", job.Name, err)
	}
	var grp group
	if r.mode == cgroupfs.ModeV2 {
		grp, err = r.newV2Group(job.Name, p)
	} else {
		grp, err = r.newV1Group(job.Name, p)
	}
	if err != nil {
		return nil, fmt.Errorf("start job %q (%s): %w", job.Name, job.Limits, err)
	}
	h, err := r.launch(ctx, job, grp)
	if err != nil {
		err = fmt.Errorf("start job %q: %w", job.Name, err)
		if kerr := grp.kill(); kerr != nil {
			return nil, errors.Join(err, kerr)
		}
		return nil, errors.Join(err, grp.remove())
	}
	return h, nil
}

// plan resolves limits against the parent cgroups.
func (r *Runner) plan(l runner.Limits) (plan, error) {
	online, err := r.availableCPUs()
	if err != nil {
		return plan{}, err
	}
	var dev cgroupfs.Dev
	if l.ReadBPS > 0 && l.ReadBPSPath != "" {
		if dev, err = cgroupfs.DiskOf(l.ReadBPSPath, r.opts.SysRoot); err != nil {
			return plan{}, fmt.Errorf("read limit: %w", err)
		}
		if _, ok := r.ctl["blkio"]; !ok && r.mode != cgroupfs.ModeV2 {
			return plan{}, fmt.Errorf("read limit: the blkio controller is not mounted under %s", r.opts.CgroupRoot)
		}
	}
	if l.MemLimitBytes > 0 && r.mode != cgroupfs.ModeV2 {
		if _, ok := r.ctl["memory"]; !ok {
			return plan{}, fmt.Errorf("memory limit: the memory controller is not mounted under %s", r.opts.CgroupRoot)
		}
	}
	if l.CPUs > 0 && r.mode != cgroupfs.ModeV2 {
		for _, c := range []string{"cpu", "cpuset"} {
			if _, ok := r.ctl[c]; !ok {
				return plan{}, fmt.Errorf("cpu limit: the %s controller is not mounted under %s", c, r.opts.CgroupRoot)
			}
		}
	}
	return planFor(l, online, dev, r.swapAccounted())
}

// availableCPUs is the parent's effective cpuset (nearest existing
// ancestor), else this process's affinity.
func (r *Runner) availableCPUs() ([]int, error) {
	key, files := "cpuset", []string{"cpuset.effective_cpus", "cpuset.cpus"}
	if r.mode == cgroupfs.ModeV2 {
		key, files = cgroupfs.KeyUnified, []string{"cpuset.cpus.effective"}
	}
	if h, ok := r.ctl[key]; ok {
		for dir := h.dir(""); strings.HasPrefix(dir, h.Root); dir = filepath.Dir(dir) {
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil || strings.TrimSpace(string(b)) == "" {
					continue
				}
				cpus, err := runner.ParseCPUSet(string(b))
				if err != nil {
					return nil, fmt.Errorf("read available CPUs from %s: %w", filepath.Join(dir, f), err)
				}
				return cpus, nil
			}
			if dir == h.Root {
				break
			}
		}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read available CPUs: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// swapAccounted reports whether a memory limit can also forbid swap.
func (r *Runner) swapAccounted() bool {
	if r.mode == cgroupfs.ModeV2 {
		_, err := os.Stat(filepath.Join(r.ctl[cgroupfs.KeyUnified].dir(""), "memory.swap.max"))
		return err == nil
	}
	h, ok := r.ctl["memory"]
	if !ok {
		return false
	}
	_, err := os.Stat(filepath.Join(h.Root, "memory.memsw.limit_in_bytes"))
	return err == nil
}

// reserveName makes the job's directory in anchor (one hierarchy) with an
// exclusive mkdir, so two runners in one process (or two processes) never
// share a cgroup. It returns the name.
func (r *Runner) reserveName(jobName string, anchor hierarchy) (string, error) {
	if err := os.MkdirAll(anchor.dir(""), 0o755); err != nil {
		return "", fmt.Errorf("create parent cgroup %s: %w", anchor.dir(""), err)
	}
	me, err := owner.Self()
	if err != nil {
		return "", fmt.Errorf("name the job's cgroup after this process: %w", err)
	}
	for range 1000 {
		name := fmt.Sprintf("%s-%s-%s-%d", r.opts.Prefix, sanitizeName(jobName), me, r.seq.Add(1))
		err := os.Mkdir(anchor.dir(name), 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create cgroup %s: %w", anchor.dir(name), err)
		}
	}
	return "", fmt.Errorf("create cgroup under %s: no free name", anchor.dir(""))
}

// sanitizeName keeps a job name usable as part of a directory name.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.' && b.Len() > 0:
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "job"
	}
	return b.String()
}

// launch starts the job's process in grp and returns its handle.
func (r *Runner) launch(ctx context.Context, job runner.Job, grp group) (*handle, error) {
	h := &handle{run: r, job: job, grp: grp, exited: make(chan struct{})}
	stdout, err := h.attach(job.Stdout)
	if err != nil {
		return nil, err
	}
	stderr, err := h.attach(job.Stderr)
	if err != nil {
		h.closeOutputs()
		h.drainOutputs()
		return nil, err
	}
	var cmd *exec.Cmd
	if cg, ok := grp.(*v2Group); ok {
		cmd, err = h.startV2(job, cg, stdout, stderr)
	} else {
		cmd, err = h.startGated(job, grp, r.opts.GatePath, stdout, stderr)
	}
	if err != nil {
		h.closeOutputs()
		h.drainOutputs()
		return nil, err
	}
	h.cmd = cmd
	markStarted(cmd.Process.Pid)
	h.since = startTicks(r.opts.ProcRoot, cmd.Process.Pid)
	go func() {
		werr := cmd.Wait()
		h.mu.Lock()
		h.endedAt, h.waitErr = time.Now(), werr
		h.mu.Unlock()
		close(h.exited)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = h.stop()
		case <-h.exited:
		}
	}()
	return h, nil
}

// handle is a running job.
type handle struct {
	run     *Runner // for Update (update.go)
	job     runner.Job
	since   uint64 // the job's start, clock ticks after boot (escape.go)
	grp     group
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the job's main process is reaped

	childEnds []*os.File // write ends passed to the child, closed after start
	readEnds  []*os.File // our ends of the output pipes
	copies    sync.WaitGroup

	mu      sync.Mutex
	endedAt time.Time
	waitErr error
	stopped bool
	removed bool
	final   runner.Stats

	waitOnce  sync.Once
	result    runner.Result
	resultErr error
}

// attach turns an output writer into a file for the child: the file itself,
// or a pipe copied into w until every holder of its write end is gone.
func (h *handle) attach(w io.Writer) (*os.File, error) {
	if w == nil {
		return nil, nil
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	h.childEnds = append(h.childEnds, pw)
	h.readEnds = append(h.readEnds, pr)
	h.copies.Add(1)
	go func() {
		defer h.copies.Done()
		_, _ = io.Copy(w, pr)
	}()
	return pw, nil
}

// drainOutputs waits until the output pipes reach EOF, which they do once
// every process holding them is dead; a holder that escaped the cgroup
// (or a failed kill) gets outputDrainTimeout before the pipes are closed.
func (h *handle) drainOutputs() {
	done := make(chan struct{})
	go func() { h.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputDrainTimeout):
		for _, f := range h.readEnds {
			f.Close()
		}
		<-done
	}
	for _, f := range h.readEnds {
		f.Close()
	}
}

// outputDrainTimeout bounds drainOutputs after the job's cgroup is empty.
const outputDrainTimeout = 5 * time.Second

func (h *handle) closeOutputs() {
	for _, f := range h.childEnds {
		f.Close()
	}
	h.childEnds = nil
}

func (h *handle) command(name string, args []string, job runner.Job, stdout, stderr *os.File) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Args[0] = name
	cmd.Env = append(os.Environ(), job.Env...)
	cmd.Dir = job.Dir
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	return cmd
}

// startGated starts the job through the gate, moves it into grp, then
// releases it (cgroup v1: no way to start a process inside a cgroup).
func (h *handle) startGated(job runner.Job, grp group, gatePath string, stdout, stderr *os.File) (*exec.Cmd, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create gate pipe: %w", err)
	}
	defer relW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		relR.Close()
		return nil, fmt.Errorf("create gate pipe: %w", err)
	}
	defer errR.Close()
	cmd := h.command(gatePath, append([]string{GateArg, "--"}, job.Argv...), job, stdout, stderr)
	cmd.Args[0] = job.Argv[0]               // what ps shows until the exec
	cmd.ExtraFiles = []*os.File{relR, errW} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = startOnLockedThread(cmd)
	relR.Close()
	errW.Close()
	h.closeOutputs()
	if err != nil {
		return nil, fmt.Errorf("start gate %s: %w", gatePath, err)
	}
	fail := func(err error) (*exec.Cmd, error) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, err
	}
	if err := awaitGateHello(errR, "gate", gatePath); err != nil {
		return fail(err)
	}
	if err := grp.addProc(cmd.Process.Pid); err != nil {
		return fail(fmt.Errorf("move process %d into its cgroup: %w", cmd.Process.Pid, err))
	}
	h.started = time.Now()
	if _, err := relW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("release gate of process %d: %w", cmd.Process.Pid, err))
	}
	relW.Close()
	msg, _ := io.ReadAll(errR) // EOF at a successful exec (close-on-exec)
	if len(msg) > 0 {
		return fail(errors.New(string(msg)))
	}
	return cmd, nil
}

// startV2 clones the job straight into its cgroup (CLONE_INTO_CGROUP).
func (h *handle) startV2(job runner.Job, grp *v2Group, stdout, stderr *os.File) (*exec.Cmd, error) {
	fd, err := unix.Open(grp.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		h.closeOutputs()
		return nil, fmt.Errorf("open cgroup %s: %w", grp.dir, err)
	}
	defer unix.Close(fd)
	cmd := h.command(job.Argv[0], job.Argv[1:], job, stdout, stderr)
	if cmd.Err != nil {
		h.closeOutputs()
		return nil, fmt.Errorf("find program %q: %w", job.Argv[0], cmd.Err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd, Pdeathsig: syscall.SIGKILL}
	err = startOnLockedThread(cmd)
	h.closeOutputs()
	if err != nil {
		return nil, fmt.Errorf("start %s in cgroup %s: %w", job.Argv[0], grp.dir, err)
	}
	h.started = time.Now()
	return cmd, nil
}

// Stats reads the job's counters now; after Wait, the final ones.
func (h *handle) Stats() (runner.Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.removed {
		return h.final, nil
	}
	st, err := h.grp.stats()
	if err != nil {
		return st, fmt.Errorf("job %q stats: %w", h.job.Name, err)
	}
	return st, nil
}

// Stop kills the job's process group and everything left in its cgroup.
func (h *handle) Stop() error {
	if err := h.stop(); err != nil {
		return fmt.Errorf("stop job %q: %w", h.job.Name, err)
	}
	return nil
}

func (h *handle) stop() error {
	h.mu.Lock()
	if h.removed {
		h.mu.Unlock()
		return nil
	}
	select {
	case <-h.exited: // ended on its own: only stragglers are left
	default:
		h.stopped = true
		// The main process is not reaped yet, so its pid is still its
		// process group's id.
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	}
	h.mu.Unlock()
	return h.grp.kill()
}

// Wait waits for the job, kills stragglers, reads the final counters and
// removes the cgroup. A non-zero exit, a signal or an OOM kill is reported
// in the Result, not as an error; errors are the runner's own failures.
func (h *handle) Wait() (runner.Result, error) {
	h.waitOnce.Do(func() { h.result, h.resultErr = h.wait() })
	return h.result, h.resultErr
}

func (h *handle) wait() (runner.Result, error) {
	<-h.exited
	var errs []error
	nested := h.grp.nested(h.run.opts.ProcRoot) // moved below the job's cgroup by the job
	killErr := h.grp.kill()
	if killErr != nil {
		errs = append(errs, fmt.Errorf("kill leftover processes: %w", killErr))
	}
	escaped, escErr := h.run.killEscaped(h.since)
	if escErr != nil {
		errs = append(errs, fmt.Errorf("kill processes that left the job's cgroup: %w", escErr))
	}
	unmarkStarted(h.cmd.Process.Pid)
	h.drainOutputs()
	final, statErr := h.grp.stats()
	if statErr != nil {
		errs = append(errs, fmt.Errorf("read final stats: %w", statErr))
	}
	h.mu.Lock()
	res := runner.Result{
		Stopped:     h.stopped,
		WallSeconds: h.endedAt.Sub(h.started).Seconds(),
		Final:       final,
		OOMKilled:   final.OOMEvents > 0,
		Escaped:     append(nested, escaped...),
	}
	waitErr := h.waitErr
	h.mu.Unlock()
	ps := h.cmd.ProcessState
	switch ws, ok := sysStatus(ps); {
	case ps == nil:
		errs = append(errs, fmt.Errorf("reap process: %w", waitErr))
		res.ExitCode = -1
	case ok && ws.Signaled():
		res.ExitCode, res.Signal = -1, ws.Signal().String()
	default:
		res.ExitCode = ps.ExitCode()
	}
	if killErr == nil {
		if err := h.grp.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	h.mu.Lock()
	h.removed, h.final = killErr == nil, final
	h.mu.Unlock()
	if len(errs) > 0 {
		return res, fmt.Errorf("job %q: %w", h.job.Name, errors.Join(errs...))
	}
	return res, nil
}

func sysStatus(ps *os.ProcessState) (syscall.WaitStatus, bool) {
	if ps == nil {
		return 0, false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ws, ok
}

// CgroupPaths maps each controller ("cpuset", "cpu", "cpuacct", "memory",
// "blkio" on v1; "unified" on v2) to the job's cgroup directory.
func (h *handle) CgroupPaths() map[string]string { return h.grp.paths() }
