// Package local runs training jobs as plain processes on this host, each in
// a fresh cgroup of its own that carries the profiling point's limits: an
// exact cpuset, a CFS quota, a memory limit that page cache is charged to,
// and optionally a read-bandwidth limit on the dataset's disk. It owns the
// translation from runner.Limits to cgroup settings (a pure step, see
// v1Resources and v2Resources) and is the only package that imports
// containerd/cgroups.
//
// # Hierarchies and drivers
//
// cgroupfs.DetectMode tells cgroup v1, hybrid (v1 controllers plus an empty-ish
// cgroup2 at <root>/unified) and v2 unified apart. On v1 and hybrid hosts the
// job gets one directory per controller (cpuset, cpu, cpuacct, memory,
// blkio), nested under the caller's own cgroup for that controller as read
// from /proc/self/cgroup (on this machine kind the memory controller puts
// the caller in /process_api/<id>, the others at /), or under
// Options.Parent.
//
// On v2 the job gets one directory in the unified tree, made by a driver
// (Options.Driver, driver.go), as container runtimes do it:
//
//   - systemd (the default where systemd is PID 1): a transient scope unit
//     per job in SystemdSlice, Delegate=yes, through systemd's D-Bus API
//     (systemd.go); inside it a "pin" cgroup with a process that keeps the
//     scope alive and a "job" cgroup with the limits (scope.go).
//   - cgroupfs: a "synergy" cgroup under the nearest ancestor of the
//     caller's cgroup that offers the controllers and can give them to
//     children, or Options.Parent, with the controllers enabled down to it
//     (v2ParentFor). The caller's own cgroup is never used: it holds
//     processes, and v2's "no internal processes" rule forbids a cgroup
//     with processes to give controllers to children.
//
// No process the runner did not start is ever moved.
//
// # Limits in force from the first instruction
//
// On v2 the job is cloned straight into its cgroup (clone3 with
// CLONE_INTO_CGROUP, through SysProcAttr.UseCgroupFD). cgroup v1 has no such
// call and Go's os/exec cannot pause between fork and exec, so on v1 the job
// is started through a gate: the runner launches its own executable as
//
//	<GatePath> __synergy-gate -- argv...
//
// with a pipe on fd 3. The gate (GateMain) blocks reading one byte from fd 3;
// meanwhile the runner writes the child's PID into every controller's
// cgroup.procs and only then writes the byte. The gate then execs the real
// argv, so the job's own code starts inside the cgroup with the limits set.
// If the exec fails the gate reports the error on fd 4 (close-on-exec, so a
// successful exec closes it silently) and Start returns it. Any program that
// embeds this runner must therefore dispatch to GateMain first thing in
// main:
//
//	if local.IsGate(os.Args) { local.GateMain() }
//
// Tests do the same in TestMain. The gate's own Go runtime runs briefly in
// the parent's cgroup before the move; its memory is not charged to the job
// and vanishes at exec.
//
// # Ending a job
//
// Every job is its own process group. Stop (and cancellation of the context
// given to Start) sends SIGKILL to the group, then kills whatever is still in
// the cgroup (children that left the group with setsid), through cgroup.kill
// on v2 where available. Wait reaps the job, kills stragglers even after a
// normal exit, reads the final counters, classifies the end (exit code,
// signal, OOM kill from the memory.oom_control or memory.events oom_kill
// counter) and removes the cgroup, on success and on every failure path.
// Jobs are tied to the runner's life: each job's first process is started
// with a parent-death signal (SIGKILL, PR_SET_PDEATHSIG), forked from one
// goroutine locked to its OS thread for the life of the process (the signal
// follows the forking thread, and Go may otherwise retire a thread while the
// runner runs on). Processes the job started itself do not get the signal;
// they are in the job's cgroup, which is named after its runner's PID and
// start time ("<prefix>-<job>-<PID>-<START>-<n>", see runner/owner), and
// ReapOrphans, which every synergy run and `synergy cleanup` call, kills
// what is left in the cgroups of runners no longer alive and removes them.
// A parent given in Options is made when missing and never removed.
package local
