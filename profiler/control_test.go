package profiler

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// A fake job's end of the channel: it answers each command it reads with
// answer(cmd), until stop is closed.
func fakeListener(t *testing.T, c *control, answer func(jobcontract.ControlCommand) []jobcontract.ControlAck, stop <-chan struct{}) {
	t.Helper()
	r := jobcontract.NewLineReader(c.cmdPath)
	jobcontract.AppendAck(c.ackPath, jobcontract.ControlAck{Seq: 0, Workers: 1, TS: nowTS(), Iter: 0})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			lines, _ := r.Next()
			for _, l := range lines {
				cmd, err := jobcontract.ParseControl(l)
				if err != nil {
					continue
				}
				for _, a := range answer(cmd) {
					jobcontract.AppendAck(c.ackPath, a)
				}
			}
		}
	}()
}

func TestControl_DoWaitsForItsAnswer(t *testing.T) {
	c := mustControl(t, t.TempDir(), 0)
	stop := make(chan struct{})
	defer close(stop)
	fakeListener(t, c, func(cmd jobcontract.ControlCommand) []jobcontract.ControlAck {
		if cmd.Workers != nil && *cmd.Workers == 9 {
			return []jobcontract.ControlAck{{Seq: cmd.Seq, Error: "too many"}}
		}
		// The first answer to a seq is its answer; a second is ignored.
		return []jobcontract.ControlAck{{Seq: cmd.Seq, Workers: *cmd.Workers, TS: nowTS(), Iter: 10 * cmd.Seq},
			{Seq: cmd.Seq, Error: "a repeated seq"}}
	}, stop)
	if !c.listening() {
		t.Fatal("the hello was not read")
	}
	w := 3
	a, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil)
	if err != nil || a.Seq != 1 || a.Workers != 3 || a.Iter != 10 {
		t.Fatalf("answer %+v, %v; want seq 1 at iter 10 with 3 workers", a, err)
	}
	w = 9
	if _, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("err = %v, want the job's refusal", err)
	}
	w = 2
	if a, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil); err != nil || a.Seq != 3 {
		t.Fatalf("answer %+v, %v after a refusal; want seq 3", a, err)
	}
}

func TestControl_DoStopsWhenTheJobEndsOrTheContextIsDone(t *testing.T) {
	c := mustControl(t, t.TempDir(), 0)
	ended := make(chan struct{})
	close(ended)
	w := 2
	if _, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, ended); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("err = %v, want the job's end", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.do(ctx, jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil); err == nil {
		t.Fatal("a cancelled context did not stop the wait")
	}
	if c.listening() {
		t.Error("a job that never said hello is taken to listen")
	}
}

func mustControl(t *testing.T, dir string, pointTimeout time.Duration) *control {
	t.Helper()
	c, err := newControl(dir, pointTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

func nowTS() float64 { return unixSeconds(time.Now()) }

// A job that never answers costs the point's time cap, not ackTimeout.
func TestControl_AnAnswerIsAwaitedNoLongerThanThePointTimeout(t *testing.T) {
	c := mustControl(t, t.TempDir(), 300*time.Millisecond)
	if c.timeout != 300*time.Millisecond {
		t.Fatalf("timeout %s under --point-timeout 300ms", c.timeout)
	}
	w := 2
	done := make(chan error, 1)
	go func() {
		_, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, 10*time.Millisecond, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNoAnswer) || c.broken == "" {
			t.Errorf("err %v (broken %q), want no answer and the channel broken", err, c.broken)
		}
	case <-time.After(ackTimeout / 2):
		t.Fatal("the wait outlasted the point timeout")
	}
	if long := mustControl(t, t.TempDir(), time.Hour); long.timeout != ackTimeout {
		t.Errorf("timeout %s under --point-timeout 1h, want ackTimeout %s", long.timeout, ackTimeout)
	}
}

// Answers written before their command (to a seq not sent yet, or dated
// before it was), and every answer after the first to a seq, are dropped
// as read: none is taken for the command's, and none is kept.
func TestControl_AnswersThatPredateTheirCommandAreIgnored(t *testing.T) {
	c := mustControl(t, t.TempDir(), time.Minute)
	jobcontract.AppendAck(c.ackPath, jobcontract.ControlAck{Seq: 0, Workers: 1, TS: nowTS()})
	for seq := 1; seq <= 1000; seq++ { // guesses of every command to come
		jobcontract.AppendAck(c.ackPath, jobcontract.ControlAck{Seq: seq, Workers: 9, TS: nowTS(), Iter: 1})
	}
	if !c.listening() {
		t.Fatal("the hello was not read")
	}
	if c.dropped != 1000 || c.answer != nil {
		t.Fatalf("dropped %d, answer %+v: want the 1000 early answers dropped", c.dropped, c.answer)
	}
	w := 3
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if a, err := c.do(ctx, jobcontract.ControlCommand{Workers: &w}, 5*time.Millisecond, nil); err == nil {
		t.Fatalf("an answer written before its command was taken: %+v", a)
	}
	// After the command: one dated before it is not its answer; one
	// dated after is.
	c2 := mustControl(t, t.TempDir(), time.Minute)
	jobcontract.AppendAck(c2.ackPath, jobcontract.ControlAck{Seq: 0, Workers: 1, TS: nowTS()})
	stop := make(chan struct{})
	defer close(stop)
	fakeListener(t, c2, func(cmd jobcontract.ControlCommand) []jobcontract.ControlAck {
		return []jobcontract.ControlAck{{Seq: cmd.Seq, Workers: 5, TS: nowTS() - 3600, Iter: 1},
			{Seq: cmd.Seq, Workers: *cmd.Workers, TS: nowTS(), Iter: 2}}
	}, stop)
	a, err := c2.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil)
	if err != nil || a.Iter != 2 || a.Workers != 3 {
		t.Errorf("answer %+v, %v; want the one dated after the command", a, err)
	}
}

// What the job said it did is what counts: an answer with other settings
// than those asked is an error, not a measurement under them.
func TestControl_AnAnswerThatDidSomethingElseIsRefused(t *testing.T) {
	tr, fa, w := true, false, 4
	for _, tc := range []struct {
		cmd  jobcontract.ControlCommand
		ack  func(seq int) jobcontract.ControlAck
		want string
	}{
		{jobcontract.ControlCommand{Replay: &tr}, func(s int) jobcontract.ControlAck {
			return jobcontract.ControlAck{Seq: s, Workers: 1, Replay: false, TS: nowTS()}
		}, "replay false to replay true"},
		{jobcontract.ControlCommand{Replay: &fa, Workers: &w}, func(s int) jobcontract.ControlAck {
			return jobcontract.ControlAck{Seq: s, Workers: 4, Replay: true, TS: nowTS()}
		}, "replay true to replay false"},
		{jobcontract.ControlCommand{Workers: &w}, func(s int) jobcontract.ControlAck {
			return jobcontract.ControlAck{Seq: s, Workers: 2, TS: nowTS()}
		}, "2 loader workers, not the 4 asked"},
		{jobcontract.ControlCommand{Workers: &w}, func(s int) jobcontract.ControlAck {
			return jobcontract.ControlAck{Seq: s, Error: "\x1b]0;pwned\a\x1b[2J" + strings.Repeat("A", 3000)}
		}, `the job refused it: "\x1b]0;pwned\a\x1b[2J`},
	} {
		c := mustControl(t, t.TempDir(), time.Minute)
		stop := make(chan struct{})
		fakeListener(t, c, func(cmd jobcontract.ControlCommand) []jobcontract.ControlAck {
			return []jobcontract.ControlAck{tc.ack(cmd.Seq)}
		}, stop)
		_, err := c.do(context.Background(), tc.cmd, time.Millisecond, nil)
		close(stop)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one saying %q", tc.cmd, err, tc.want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x1b\a") || len(err.Error()) > 300 {
			t.Errorf("the job's text reached the message raw or long (%d bytes): %q", len(err.Error()), err)
		}
	}
}

// A job that swaps the command file for a link to a file only root may
// write breaks the channel: the command is not written through it, and
// the reason says what happened.
func TestControl_AReplacedCommandFileBreaksTheChannel(t *testing.T) {
	dir := t.TempDir()
	c := mustControl(t, dir, time.Minute)
	victim := writeVictim(t)
	os.Remove(c.cmdPath)
	if err := os.Symlink(victim, c.cmdPath); err != nil {
		t.Fatal(err)
	}
	w := 2
	_, err := c.do(context.Background(), jobcontract.ControlCommand{Workers: &w}, time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "replaced its control file") || !strings.Contains(c.broken, "symlink") {
		t.Errorf("err %v (broken %q), want the swap named", err, c.broken)
	}
	checkVictim(t, victim)
	if c.listening() {
		t.Error("a broken channel is taken to listen")
	}
}
