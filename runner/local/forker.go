package local

import (
	"os/exec"
	"runtime"
	"sync"
)

// The kernel sends a child its parent-death signal (PR_SET_PDEATHSIG, set
// through SysProcAttr.Pdeathsig) when the *thread* that forked it exits,
// not the process. Go may retire an OS thread at any time (a goroutine that
// ends while locked to its thread takes the thread with it), which would
// SIGKILL a job while synergy still runs. So every job is forked from one
// goroutine locked to its OS thread for the life of the process: that
// thread ends only when the process does, and then the signal is wanted.

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	forkerOnce sync.Once
	forkCh     chan forkRequest
)

func forker() {
	runtime.LockOSThread() // never unlocked: the thread lives as long as the process
	for req := range forkCh {
		req.done <- req.cmd.Start()
	}
}

// startOnLockedThread is cmd.Start run on the forking thread.
func startOnLockedThread(cmd *exec.Cmd) error {
	forkerOnce.Do(func() {
		forkCh = make(chan forkRequest)
		go forker()
	})
	done := make(chan error, 1)
	forkCh <- forkRequest{cmd: cmd, done: done}
	return <-done
}
