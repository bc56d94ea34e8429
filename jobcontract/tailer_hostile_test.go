package jobcontract

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A line with no end, far longer than a metrics line, is held only up to
// the bound while it is read; once it ends it is one bad line and the good
// lines around it count.
func TestTailer_LongLineIsBoundedAndBad(t *testing.T) {
	good := `{"iter":0,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}` + "\n"
	path := filepath.Join(t.TempDir(), "m.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(good)
	huge := bytes.Repeat([]byte("x"), 4<<20) // 4 MiB, no newline yet
	f.Write(huge)
	tl := NewTailer(path)
	its, err := tl.Poll()
	if err != nil || len(its) != 1 {
		t.Fatalf("poll: %d iterations, %v; want the good line", len(its), err)
	}
	if len(tl.partial) > MaxLineBytes+1 || tl.partialLen != int64(len(huge)) {
		t.Errorf("holding %d bytes of a %d-byte line (counted %d), want at most %d held", len(tl.partial), len(huge), tl.partialLen, MaxLineBytes+1)
	}
	if why := tl.Broken(len(its)); why != "" {
		t.Errorf("an unterminated line after a good one: Broken %q", why)
	}
	f.WriteString("\n" + good)
	its, _ = tl.Poll()
	if len(its) != 1 || tl.Bad != 1 || !strings.Contains(tl.FirstBad, "line 2: ") || !strings.Contains(tl.FirstBad, "longer than 64 KiB") {
		t.Errorf("after the line ended: %d iterations, bad %d, first bad %q; want 1 good and line 2 too long", len(its), tl.Bad, tl.FirstBad)
	}
	if len(tl.FirstBad) > MaxQuotedLine+200 {
		t.Errorf("FirstBad is %d bytes, want the line quoted short", len(tl.FirstBad))
	}
}

// Only a stream of one unterminated huge line: Broken says how long it is.
func TestTailer_UnterminatedHugeLineBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("y"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := NewTailer(path)
	its, _ := tl.Poll()
	if why := tl.Broken(len(its)); !strings.Contains(why, "no complete line (1048576 bytes without a newline") {
		t.Errorf("Broken = %q", why)
	}
}

// The job owns its metrics file: a symlink (to a file only root may read)
// is not followed and a FIFO does not block the tailer.
func TestTailer_RefusesASymlinkOrAFIFO(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"iter":0,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}`+"\n"), 0o600)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if its, err := NewTailer(link).Poll(); err == nil || len(its) != 0 || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("tailing a symlink: %d iterations, %v; want a refusal naming the symlink", len(its), err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := NewTailer(fifo).Poll(); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("tailing a FIFO: %v, want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("tailing a FIFO blocked")
	}
}

// A job that wrote far more than one Poll reads is read at MaxPollBytes a
// call: what a call returns is bounded, and nothing is lost.
func TestTailer_PollIsBounded(t *testing.T) {
	line := `{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}` + "\n"
	n := 3*MaxPollBytes/len(line) + 7
	path := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte(line), n), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := NewTailer(path)
	total, calls := 0, 0
	for {
		its, err := tl.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if len(its) == 0 {
			break
		}
		calls++
		if len(its)*len(line) > MaxPollBytes+tailChunk {
			t.Fatalf("one Poll returned %d lines (%d bytes), above MaxPollBytes", len(its), len(its)*len(line))
		}
		total += len(its)
	}
	if total != n || calls < 3 {
		t.Errorf("%d lines in %d calls, want all %d in at least 3", total, calls, n)
	}
}

// emulated_gpu is a GPU type's name, not kilobytes a job could make the
// profiler hold in every line.
func TestParseIteration_BoundsEmulatedGPU(t *testing.T) {
	long := `{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9,"emulated":true,"emulated_gpu":"` + strings.Repeat("v", MaxEmulatedGPU+1) + `"}`
	if _, err := ParseIteration([]byte(long)); err == nil || !strings.Contains(err.Error(), "emulated_gpu") {
		t.Errorf("a %d-byte emulated_gpu: %v, want it refused by name", MaxEmulatedGPU+1, err)
	}
}
