package synthtrain

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// Control is the job's end of the control channel (jobcontract/control.go,
// docs/job-contract.md): where commands come from and answers go.
type Control struct {
	// CommandFile is $SYNERGY_CONTROL_FILE, AckFile $SYNERGY_CONTROL_ACK_FILE.
	CommandFile, AckFile string
	// Log receives what is worth a line on stderr (the command file
	// cannot be read); nil: nothing.
	Log io.Writer
	// OnWorkers, when set, is called after the loader's worker count
	// changed (cmd's main raises GOMAXPROCS with it).
	OnWorkers func(workers int)
}

// knobs is what the control channel turns in the training loop.
type knobs interface {
	// setWorkers changes the loader's worker count and returns the
	// generation whose batches count as "under the new settings".
	setWorkers(n int) (gen int, err error)
	workers() int
	// gen is the generation in force.
	gen() int
}

// loaderKnobs turns a Loader.
type loaderKnobs struct{ l *Loader }

func (k loaderKnobs) setWorkers(n int) (int, error) { return k.l.SetWorkers(n) }
func (k loaderKnobs) workers() int                  { return k.l.Workers() }
func (k loaderKnobs) gen() int {
	k.l.mu.Lock()
	defer k.l.mu.Unlock()
	return k.l.gen
}

// noKnobs is the synthetic source: no loader, no workers.
type noKnobs struct{}

func (noKnobs) setWorkers(int) (int, error) {
	return 0, fmt.Errorf("--%s: no loader, so no workers to change", jobcontract.FlagSyntheticData)
}
func (noKnobs) workers() int { return 0 }
func (noKnobs) gen() int     { return 0 }

// controller applies commands between batches and answers them.
//
// When it answers: a command's answer is written when the first batch
// under its settings reaches the training loop, with that moment (ts) and
// the iteration that consumes it (iter). Under a new worker count that is
// the first batch built by the new worker set (batches carry the set that
// built them), not merely the first delivered after the change: batches
// prefetched by the old set come first, and their rate is the old one's.
// Under replay it is the first batch handed again; back from replay, the
// first batch from the loader. An answer still waiting when a later
// command's answer is due is written with it (the later settings
// supersede it), so every command is answered, in order.
type controller struct {
	cfg     Control
	cmds    *jobcontract.LineReader
	k       knobs
	replay  bool
	hello   bool
	pending []pendingAck
	lastErr string
}

type pendingAck struct {
	ack jobcontract.ControlAck
	// due says whether a batch counts as under the command's settings.
	replay bool
	gen    int
}

func newController(cfg Control, k knobs) *controller {
	return &controller{cfg: cfg, cmds: jobcontract.NewLineReader(cfg.CommandFile), k: k}
}

// poll reads the commands appended since the last call and applies them in
// order; a bad one is answered with an error at once. It does nothing
// before the hello: the job listens from its first batch on. iter is the
// iteration about to run, for error answers.
func (c *controller) poll(iter int) error {
	if !c.hello {
		return nil
	}
	lines, err := c.cmds.Next()
	if err != nil && err.Error() != c.lastErr {
		c.lastErr = err.Error()
		if c.cfg.Log != nil {
			fmt.Fprintf(c.cfg.Log, "synthtrain: control channel (%s): %v\n", jobcontract.EnvControlFile, err)
		}
	}
	for _, line := range lines {
		if err := c.apply(line, iter); err != nil {
			return err
		}
	}
	return nil
}

func (c *controller) apply(line []byte, iter int) error {
	cmd, err := jobcontract.ParseControl(line)
	if err == nil && cmd.Workers != nil && *cmd.Workers == 0 {
		err = fmt.Errorf("workers 0: synthtrain's loader always has worker goroutines (at least 1)")
	}
	var gen int
	if err == nil && cmd.Workers != nil {
		gen, err = c.k.setWorkers(*cmd.Workers)
		if err == nil && c.cfg.OnWorkers != nil {
			c.cfg.OnWorkers(*cmd.Workers)
		}
	}
	if err != nil {
		seq := cmd.Seq
		if seq < 1 { // the line did not parse: take what seq it has
			var s struct {
				Seq int `json:"seq"`
			}
			_ = json.Unmarshal(line, &s)
			seq = max(s.Seq, 0)
		}
		return c.answer(jobcontract.ControlAck{Seq: seq, Workers: c.k.workers(), Replay: c.replay,
			TS: unixSeconds(time.Now()), Iter: iter, Error: err.Error()})
	}
	if cmd.Workers == nil {
		gen = c.k.gen()
	}
	if cmd.Replay != nil {
		c.replay = *cmd.Replay
	}
	c.pending = append(c.pending, pendingAck{
		ack:    jobcontract.ControlAck{Seq: cmd.Seq, Workers: c.k.workers(), Replay: c.replay},
		replay: c.replay, gen: gen,
	})
	return nil
}

// delivered is called when batch b reached the training loop at t for
// iteration iter (replayed: handed again). It writes the hello at the
// first batch and the answers now due.
func (c *controller) delivered(b Batch, replayed bool, t time.Time, iter int) error {
	ts := unixSeconds(t)
	if !c.hello {
		c.hello = true
		if err := c.answer(jobcontract.ControlAck{Seq: 0, Workers: c.k.workers(), TS: ts, Iter: iter}); err != nil {
			return err
		}
	}
	due := -1
	for i, p := range c.pending {
		if p.replay == replayed && (replayed || b.gen >= p.gen) {
			due = i
		}
	}
	for _, p := range c.pending[:due+1] {
		p.ack.TS, p.ack.Iter = ts, iter
		if err := c.answer(p.ack); err != nil {
			return err
		}
	}
	c.pending = c.pending[due+1:]
	return nil
}

func (c *controller) answer(a jobcontract.ControlAck) error {
	if err := jobcontract.AppendAck(c.cfg.AckFile, a); err != nil {
		return fmt.Errorf("answer control command %d (%s): %w", a.Seq, jobcontract.EnvControlAckFile, err)
	}
	return nil
}

// unixSeconds is t on the metrics stream's clock.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }
