package synthtrain

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// FuzzController is the job's end of the control channel fed whatever
// the command file could hold: it never panics, never answers more
// commands than it read lines, sets only worker counts the contract
// allows, and every answer it writes is one the profiler's reader
// accepts (jobcontract.ParseAck), so a bad command cannot break the
// channel from the job's side.
func FuzzController(f *testing.F) {
	for _, s := range []string{
		`{"seq":1,"workers":4}` + "\n" + `{"seq":2,"replay":true}` + "\n" + `{"seq":3,"replay":false,"workers":1}` + "\n",
		`{bogus` + "\n" + `{"seq":1,"workers":-1}` + "\n" + `{"seq":2,"workers":0}` + "\n" + `{"seq":3,"frob":1}` + "\n",
		`{"seq":1,"workers":99999999999}` + "\n" + `{"seq":0}` + "\n" + `{"seq":1,"seq":1}` + "\n",
		"\x1b[2J\u202e" + `{"seq":5}` + "\n" + string(bytes.Repeat([]byte("z"), jobcontract.MaxControlLine+1)) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := controlFiles(t)
		if err := os.WriteFile(cfg.CommandFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		k := &fakeKnobs{n: 2}
		c := newController(cfg, k)
		at := time.Unix(1_700_000_000, 0)
		if err := c.delivered(Batch{}, false, at, 0); err != nil { // the hello
			t.Fatal(err)
		}
		if err := c.poll(1); err != nil {
			t.Fatal(err)
		}
		if err := c.delivered(Batch{gen: k.g}, c.replay, at.Add(time.Second), 1); err != nil {
			t.Fatal(err)
		}
		if k.n < 1 || k.n > MaxWorkers {
			t.Errorf("workers set to %d", k.n)
		}
		lines, err := jobcontract.NewLineReader(cfg.AckFile).Next()
		if err != nil {
			t.Fatalf("the answers cannot be read: %v", err)
		}
		if n := bytes.Count(data, []byte("\n")) + 1; len(lines) > n+1 { // +1: the hello
			t.Errorf("%d answers to %d lines", len(lines)-1, n)
		}
		for _, l := range lines {
			if _, err := jobcontract.ParseAck(l); err != nil {
				t.Errorf("the job wrote an answer the profiler refuses: %v", err)
			}
		}
	})
}
