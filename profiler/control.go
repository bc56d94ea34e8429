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
//
// Both files lie in the launch's metrics directory, which the job (and a
// container's user) can write. The command file is made by the profiler
// before the launch and written only through the descriptor it holds
// (jobcontract.ControlWriter): a job that swaps it for a link, a FIFO or
// anything else breaks the channel, and the launch ends, with a reason
// that says so. The answer file is the job's: read without following a
// link or opening a FIFO (jobcontract.LineReader), at most 1 MiB a poll.
// What is kept of the answers is bounded: the hello and the answer to the
// command in flight; every other answer is dropped as it is read.
type control struct {
	w                *jobcontract.ControlWriter
	cmdPath, ackPath string
	acks             *jobcontract.LineReader
	seq              int
	// timeout bounds the wait for one answer: the point's time cap
	// (--point-timeout), at most ackTimeout.
	timeout time.Duration
	// hello is the job's first answer (seq 0): it listens. nil until then.
	hello *jobcontract.ControlAck
	// answer is the first answer to command seq, read after it was sent;
	// sent is when it was (Unix seconds).
	answer *jobcontract.ControlAck
	sent   float64
	// dropped counts answers ignored: to a command not sent yet, to an
	// earlier one, repeated, or dated before their command.
	dropped int
	// broken says why the channel cannot be used any more ("" while it
	// can): a malformed answer, a command that timed out, a replaced file.
	broken string
}

// Names of the channel's files in a launch's metrics directory.
const (
	controlFileName = "control.jsonl"
	ackFileName     = "control-ack.jsonl"
)

// newControl creates the command file in the launch's metrics directory,
// before the job starts (the job creates its answer file). pointTimeout
// bounds each command's wait for its answer.
func newControl(dir string, pointTimeout time.Duration) (*control, error) {
	w, err := jobcontract.CreateControl(filepath.Join(dir, controlFileName))
	if err != nil {
		return nil, err
	}
	c := &control{w: w, cmdPath: w.Path(), ackPath: filepath.Join(dir, ackFileName), timeout: ackTimeout}
	if pointTimeout > 0 {
		c.timeout = min(pointTimeout, ackTimeout)
	}
	c.acks = jobcontract.NewLineReader(c.ackPath)
	return c, nil
}

// close closes the command file's descriptor.
func (c *control) close() { c.w.Close() }

// env is the job's environment for the channel.
func (c *control) env() []string {
	return []string{jobcontract.EnvControlFile + "=" + c.cmdPath, jobcontract.EnvControlAckFile + "=" + c.ackPath}
}

// answerSlack is how far before its command an answer's time may lie (the
// job's clock is the profiler's; this is rounding).
const answerSlack = 0.5

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
		switch {
		case a.Seq == 0 && c.hello == nil:
			c.hello = &a
		case a.Seq == c.seq && c.seq > 0 && c.answer == nil && (a.Error != "" || a.TS >= c.sent-answerSlack):
			c.answer = &a // the first answer to a seq is its answer
		default:
			// Written before its command (a seq not sent yet, or a time
			// before it was), or after its answer: not an answer.
			c.dropped++
		}
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
// that each import a framework takes seconds, not minutes. The point's
// time cap bounds it further (newControl).
const ackTimeout = 2 * time.Minute

// do sends cmd and waits for its answer, polling every poll, until the
// job answers, ends (ended closed), ctx is cancelled or c.timeout passes.
// An answer that says the job did something else than asked (another
// worker count, replay not in force) is an error: what the profile records
// is what the job said it did.
func (c *control) do(ctx context.Context, cmd jobcontract.ControlCommand, poll time.Duration, ended <-chan struct{}) (jobcontract.ControlAck, error) {
	if c.broken != "" {
		return jobcontract.ControlAck{}, errors.New(c.broken)
	}
	c.poll() // what the job wrote so far predates the command
	c.seq++
	cmd.Seq, c.answer, c.sent = c.seq, nil, unixSeconds(time.Now())
	if err := c.w.Append(cmd); err != nil {
		c.broken = "write the control file: " + err.Error()
		return jobcontract.ControlAck{}, errors.New(c.broken)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	for {
		c.poll()
		if c.broken != "" {
			return jobcontract.ControlAck{}, errors.New(c.broken)
		}
		if a := c.answer; a != nil {
			return *a, checkAnswer(cmd, *a)
		}
		select {
		case <-ctx.Done():
			return jobcontract.ControlAck{}, ctx.Err()
		case <-ended:
			return jobcontract.ControlAck{}, errors.New("the job ended before it answered")
		case <-deadline.C:
			c.broken = fmt.Sprintf("command %d had no answer within %s", cmd.Seq, c.timeout)
			return jobcontract.ControlAck{}, fmt.Errorf("%w within %s", errNoAnswer, c.timeout)
		case <-t.C:
		}
	}
}

// checkAnswer says how the answer a does not report cmd done: the job's
// refusal (quoted: its text is escaped and cut, for the terminal), or
// settings other than those asked.
func checkAnswer(cmd jobcontract.ControlCommand, a jobcontract.ControlAck) error {
	switch {
	case a.Error != "":
		return fmt.Errorf("the job refused it: %s", jobcontract.QuoteLine([]byte(a.Error)))
	case cmd.Workers != nil && a.Workers != *cmd.Workers:
		return fmt.Errorf("the job answered with %d loader workers, not the %d asked", a.Workers, *cmd.Workers)
	case cmd.Replay != nil && a.Replay != *cmd.Replay:
		return fmt.Errorf("the job answered replay %t to replay %t: it did not do it", a.Replay, *cmd.Replay)
	}
	return nil
}
