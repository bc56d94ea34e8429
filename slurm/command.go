package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Commander runs one Slurm command (an argv array, never a shell string)
// and returns its standard output. Exec is the real one; tests hand in
// canned output.
type Commander interface {
	Run(ctx context.Context, argv ...string) ([]byte, error)
}

// Exec runs Slurm's commands as processes. Env, when not empty, is added
// to this process's environment (SLURM_CONF=...).
type Exec struct {
	Env []string
}

// CommandError is a Slurm command that failed: its argv, exit status and
// what it printed on standard error.
type CommandError struct {
	Argv   []string
	Err    error
	Stderr string
}

func (e *CommandError) Error() string {
	msg := strings.Join(e.Argv, " ") + ": " + e.Err.Error()
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// Run implements Commander.
func (x Exec) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("slurm: empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if len(x.Env) > 0 {
		cmd.Env = append(cmd.Environ(), x.Env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &CommandError{Argv: argv, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// ErrUnreachable wraps the error of a read when slurmctld did not answer.
var ErrUnreachable = errors.New("slurmctld not reachable")

// unreachable says whether a Slurm command failed because the controller
// did not answer (or the commands are not installed).
func unreachable(err error) bool {
	var ce *CommandError
	if errors.Is(err, exec.ErrNotFound) {
		return true
	}
	if errors.As(err, &ce) {
		s := strings.ToLower(ce.Stderr)
		return strings.Contains(s, "unable to contact slurm controller") || strings.Contains(s, "connection refused") ||
			strings.Contains(s, "could not establish a configuration source") || strings.Contains(s, "zero bytes were transmitted")
	}
	return false
}

// wrapRead names what a failed read was for, and marks an unreachable
// controller with ErrUnreachable.
func wrapRead(what string, err error) error {
	if unreachable(err) {
		return fmt.Errorf("%s: %w (is slurmctld running, and SLURM_CONF set to its slurm.conf?): %v", what, ErrUnreachable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
