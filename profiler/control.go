package profiler

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// control is the profiler's end of a launch's control channel
// (jobcontract/control.go, docs/job-contract.md): it appends commands to
// the job's control file and reads the job's answers.
type control struct {
	cmdPath, ackPath string
	acks             *jobcontract.LineReader
	seq              int
	// hello is the job's first answer (seq 0): it listens. nil until then.
	hello *jobcontract.ControlAck
	got   map[int]jobcontract.ControlAck
	// broken says why the channel cannot be used any more ("" while it
	// can): a malformed answer, a command that timed out.
	broken string
}

// newControl makes the channel's two files' paths in the launch's
// metrics directory (the job creates nothing until it answers).
func newControl(dir string) *control {
	c := &control{cmdPath: filepath.Join(dir, "control.jsonl"), ackPath: filepath.Join(dir, "control-ack.jsonl"),
		got: map[int]jobcontract.ControlAck{}}
	c.acks = jobcontract.NewLineReader(c.ackPath)
	return c
}

// env is the job's environment for the channel.
func (c *control) env() []string {
	return []string{jobcontract.EnvControlFile + "=" + c.cmdPath, jobcontract.EnvControlAckFile + "=" + c.ackPath}
}

// poll reads the answers the job appended; a malformed one breaks the
// channel.
func (c *control) poll() {
	if c.broken != "" {
		return
	}
	lines, err := c.acks.Next()
	if err != nil {
		c.broken = "its answers cannot be read: " + err.Error()
		return
	}
	for _, l := range lines {
		a, err := jobcontract.ParseAck(l)
		if err != nil {
			c.broken = err.Error()
			return
		}
		if _, seen := c.got[a.Seq]; seen {
			continue // the first answer to a seq is its answer
		}
		if a.Seq == 0 {
			c.hello = &a
		}
		c.got[a.Seq] = a
	}
}

// listening reports whether the job said it takes commands.
func (c *control) listening() bool {
	c.poll()
	return c.hello != nil && c.broken == ""
}

// errNoAnswer: the job did not answer a command in time.
var errNoAnswer = errors.New("no answer")

// ackTimeout bounds the wait for an answer: a loader starting 16 workers
// that each import a framework takes seconds, not minutes.
const ackTimeout = 2 * time.Minute

// do sends cmd and waits for its answer, polling every poll, until the
// job answers, ends (ended closed), ctx is cancelled or ackTimeout passes.
func (c *control) do(ctx context.Context, cmd jobcontract.ControlCommand, poll time.Duration, ended <-chan struct{}) (jobcontract.ControlAck, error) {
	c.seq++
	cmd.Seq = c.seq
	if err := jobcontract.AppendControl(c.cmdPath, cmd); err != nil {
		return jobcontract.ControlAck{}, fmt.Errorf("write the control file: %w", err)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	deadline := time.NewTimer(ackTimeout)
	defer deadline.Stop()
	for {
		c.poll()
		if c.broken != "" {
			return jobcontract.ControlAck{}, errors.New(c.broken)
		}
		if a, ok := c.got[cmd.Seq]; ok {
			if a.Error != "" {
				return a, fmt.Errorf("the job refused it: %s", a.Error)
			}
			return a, nil
		}
		select {
		case <-ctx.Done():
			return jobcontract.ControlAck{}, ctx.Err()
		case <-ended:
			return jobcontract.ControlAck{}, errors.New("the job ended before it answered")
		case <-deadline.C:
			c.broken = fmt.Sprintf("command %d had no answer within %s", cmd.Seq, ackTimeout)
			return jobcontract.ControlAck{}, fmt.Errorf("%w within %s", errNoAnswer, ackTimeout)
		case <-t.C:
		}
	}
}
