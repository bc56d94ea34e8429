package local

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// GateArg is the first argument that selects gate mode: a program embedding
// this runner must call GateMain when os.Args[1] is GateArg.
const GateArg = "__synergy-gate"

// Gate file descriptors in the gated child.
const (
	gateReleaseFD = 3 // one byte from the runner releases the gate
	gateErrFD     = 4 // close-on-exec; the gate writes why an exec failed
)

// The gate's first byte on fd 4, and how long the runner waits for it.
const (
	gateHello        = 'G'
	gateHelloTimeout = 10 * time.Second
)

// Exit statuses of a gate that never reached the job.
const (
	gateExitUsage      = 2   // called without "-- argv..."
	gateExitAbandoned  = 125 // the runner closed the gate without releasing it
	gateExitExecFailed = 126 // the program was found but could not be executed
	gateExitNotFound   = 127 // the program was not found
)

// awaitGateHello waits for the gate's first byte on r: a gate whose main
// does not dispatch to GateMain is an error, not a job run with odd
// arguments. what names the process in the error ("gate", "pin process").
func awaitGateHello(r *os.File, what, gatePath string) error {
	var hello [1]byte
	_ = r.SetReadDeadline(time.Now().Add(gateHelloTimeout))
	defer r.SetReadDeadline(time.Time{})
	if n, err := r.Read(hello[:]); n != 1 || hello[0] != gateHello {
		return fmt.Errorf("%s %s did not answer (%v): its main must call local.GateMain when local.IsGate(os.Args)", what, gatePath, err)
	}
	return nil
}

// IsGate reports whether args (os.Args) ask for gate mode.
func IsGate(args []string) bool { return len(args) > 1 && args[1] == GateArg }

// The runner starts the gate with a parent-death signal, which the kernel
// keeps per thread: it is set on the gate's first thread only, and a
// multithreaded process that execs from another thread becomes that thread,
// without the signal. Go moves a goroutine between threads whenever it
// parks (the gate's read of its release pipe does), so the gate's exec
// could run on a thread without the signal, and the job would outlive a
// killed synergy (TestReap_KillMinus9OfTheRunner caught it, about once in
// twenty runs). So in gate mode the main goroutine stays on the first
// thread, and the gate sets the signal again on the thread that execs.
func init() {
	if IsGate(os.Args) {
		runtime.LockOSThread()
	}
}

// GateMain runs the gate: it waits until the runner has put this process in
// the job's cgroups (one byte on fd 3), then replaces itself with the job
// (os.Args[3:], after "__synergy-gate --"). It never returns.
func GateMain() {
	os.Exit(gate(os.Args[2:], os.Stderr))
}

// gate returns only when it could not exec the job. It writes gateHello
// on fd 4, waits for the release byte on fd 3, then execs.
func gate(args []string, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintf(stderr, "%s: usage: %s -- program [args...]\n", GateArg, GateArg)
		return gateExitUsage
	}
	argv := args[1:]
	parent := os.Getppid()
	release := os.NewFile(gateReleaseFD, "synergy-gate-release")
	errPipe := os.NewFile(gateErrFD, "synergy-gate-errors")
	if errPipe != nil {
		if _, err := errPipe.Write([]byte{gateHello}); err != nil {
			return gateExitAbandoned
		}
	}
	var b [1]byte
	if n, _ := release.Read(b[:]); n != 1 {
		return gateExitAbandoned
	}
	release.Close()
	unix.CloseOnExec(gateErrFD)
	report := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if errPipe == nil || func() error { _, err := errPipe.WriteString(msg); return err }() != nil {
			fmt.Fprintln(stderr, msg)
		}
		return code
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return report(gateExitNotFound, "find program %q: %v", argv[0], err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return report(gateExitExecFailed, "set the parent-death signal: %v", err)
	}
	if os.Getppid() != parent { // the runner died before the signal was set again
		return gateExitAbandoned
	}
	err = syscall.Exec(path, argv, os.Environ())
	return report(gateExitExecFailed, "exec %s: %v", path, err)
}
