package reap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/synergy-sched/synergy/runner/owner"
)

// WatchdogArg is the first argument that runs a program embedding this
// package as a watchdog: its main must call WatchdogMain when
// IsWatchdog(os.Args), before anything else.
const WatchdogArg = "__synergy-watchdog"

// watchFD is the watchdog's end of the pipe from its run.
const watchFD = 3

// doneByte, written by Close, tells the watchdog the run ended normally.
const doneByte = 'D'

// Watchdog is a process that outlives its run: when the run dies without
// closing it (kill -9, a crash), the read end of its pipe reaches end of
// file and the watchdog reaps what the run left (Orphans).
type Watchdog struct {
	w   *os.File
	cmd *exec.Cmd
}

// Watch starts the watchdog: a copy of this executable (os.Executable) run
// as "<exe> __synergy-watchdog --owner PID-START [--docker] [--docker-host H]" in a process
// group of its own (Ctrl-C at a terminal does not reach it), reporting on
// stderr what it removes.
func Watch(o Options) (*Watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("watchdog: find own executable: %w", err)
	}
	r, w, err := os.Pipe() // close-on-exec: no job inherits the write end
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	args := []string{WatchdogArg}
	if self, err := owner.Self(); err == nil {
		args = append(args, "--owner", self.String())
	}
	if o.Docker {
		args = append(args, "--docker")
	}
	if o.DockerHost != "" {
		args = append(args, "--docker-host", o.DockerHost)
	}
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: start %s: %w", exe, err)
	}
	return &Watchdog{w: w, cmd: cmd}, nil
}

// Close tells the watchdog that the run ended normally and waits for it to
// exit.
func (wd *Watchdog) Close() error {
	_, werr := wd.w.Write([]byte{doneByte})
	cerr := wd.w.Close()
	err := wd.cmd.Wait()
	return errors.Join(werr, cerr, err)
}

// IsWatchdog reports whether args (os.Args) ask for watchdog mode.
func IsWatchdog(args []string) bool { return len(args) > 1 && args[1] == WatchdogArg }

// WatchdogMain runs the watchdog and exits.
func WatchdogMain() {
	os.Exit(watchdog(os.Args[2:], os.NewFile(watchFD, "synergy-watchdog"), os.Stderr))
}

// watchdog waits on its run's pipe. The done byte ends it quietly; end of
// file means the run died, and it reaps.
func watchdog(args []string, pipe *os.File, stderr io.Writer) int {
	var o Options
	var run *owner.ID // the run watched, when it said which
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--docker":
			o.Docker = true
		case args[i] == "--docker-host" && i+1 < len(args):
			o.DockerHost = args[i+1]
			i++
		case args[i] == "--owner" && i+1 < len(args):
			id, err := owner.Parse(args[i+1])
			if err != nil {
				fmt.Fprintf(stderr, "%s: --owner: %v\n", WatchdogArg, err)
				return 2
			}
			run = &id
			i++
		default:
			fmt.Fprintf(stderr, "%s: unknown argument %q\n", WatchdogArg, args[i])
			return 2
		}
	}
	if pipe == nil {
		fmt.Fprintf(stderr, "%s: no pipe on fd %d\n", WatchdogArg, watchFD)
		return 2
	}
	// A closed terminal or Ctrl-C ends the run; the watchdog must stay to
	// clean up after it. So must it when the run's stderr, which it shares,
	// is a pipe whose reader left with the run: a write there then fails
	// with EPIPE instead of killing the watchdog with SIGPIPE.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	var b [1]byte
	n, _ := pipe.Read(b[:])
	if n == 1 && b[0] == doneByte {
		return 0
	}
	// The kernel closes a dying process's files before it shows as a
	// zombie, and the reaping below spares a run that still shows as alive:
	// wait until the run is gone, or the cgroups of a run killed with -9
	// could outlive it.
	if run != nil && !waitGone(owner.ProcRoot, *run, runExitWait) {
		fmt.Fprintf(stderr, "synergy watchdog: its run %s still shows as alive %s after closing its pipe; reaping what is dead\n", run, runExitWait)
	}
	rep, err := Orphans(context.Background(), o)
	if len(rep.Removed) > 0 {
		fmt.Fprintf(stderr, "synergy watchdog: the run died; removed what it left: %s\n", strings.Join(rep.Removed, "; "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "synergy watchdog: %v\n", err)
		return 1
	}
	return 0
}

// runExitWait bounds how long the watchdog waits for its run to show as
// gone after the run's end of the pipe closed (microseconds, as a rule).
const runExitWait = 10 * time.Second

// waitGone polls procRoot until process id is no longer alive (gone, a
// zombie or its PID reused), and reports whether it saw that within limit.
func waitGone(procRoot string, id owner.ID, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for owner.Alive(procRoot, id) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
