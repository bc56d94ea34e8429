package profiler

import (
	"context"
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
	jobcontract.AppendAck(c.ackPath, jobcontract.ControlAck{Seq: 0, Workers: 1, TS: 1.7e9, Iter: 0})
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
	c := newControl(t.TempDir())
	stop := make(chan struct{})
	defer close(stop)
	fakeListener(t, c, func(cmd jobcontract.ControlCommand) []jobcontract.ControlAck {
		if cmd.Workers != nil && *cmd.Workers == 9 {
			return []jobcontract.ControlAck{{Seq: cmd.Seq, Error: "too many"}}
		}
		// The first answer to a seq is its answer; a second is ignored.
		return []jobcontract.ControlAck{{Seq: cmd.Seq, Workers: *cmd.Workers, TS: 1.7e9 + float64(cmd.Seq), Iter: 10 * cmd.Seq},
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
	c := newControl(t.TempDir())
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
