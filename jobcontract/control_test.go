package jobcontract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reader hands out complete lines only, each once, in order: a line
// still being written waits for its newline.
func TestLineReader_CompleteLinesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "control.jsonl")
	r := NewLineReader(path)
	if lines, err := r.Next(); err != nil || len(lines) != 0 {
		t.Fatalf("a file not there yet: %q, %v; want nothing", lines, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"seq":1,"workers":2}` + "\n" + `{"seq":2,"rep`)
	lines, err := r.Next()
	if err != nil || len(lines) != 1 || string(lines[0]) != `{"seq":1,"workers":2}` {
		t.Fatalf("lines %q, %v; want the first line only", lines, err)
	}
	f.WriteString(`lay":true}` + "\n\n")
	lines, err = r.Next()
	if err != nil || len(lines) != 1 || string(lines[0]) != `{"seq":2,"replay":true}` {
		t.Fatalf("lines %q, %v; want the second line, whole, once", lines, err)
	}
	if lines, _ := r.Next(); len(lines) != 0 {
		t.Fatalf("lines %q handed out again", lines)
	}
	f.WriteString(strings.Repeat("x", MaxControlLine+1))
	if _, err := r.Next(); err == nil {
		t.Fatal("a line above MaxControlLine was accepted")
	}
}

func TestParseControlAndAck(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"seq":0,"workers":1}`, "seq 0 is not a positive number"},
		{`{"seq":1,"workers":-1}`, "workers -1 is negative"},
		{`{"seq":1,"bogus":1}`, "unknown field"},
		{`not json`, "control line"},
	} {
		if _, err := ParseControl([]byte(tc.line)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseControl(%s) = %v, want an error saying %q", tc.line, err, tc.want)
		}
	}
	c, err := ParseControl([]byte(`{"seq":3,"replay":false,"workers":2}`))
	if err != nil || c.Seq != 3 || c.Workers == nil || *c.Workers != 2 || c.Replay == nil || *c.Replay {
		t.Errorf("ParseControl = %+v, %v", c, err)
	}
	a, err := ParseAck([]byte(`{"seq":1,"workers":2,"ts":1795822339.4,"iter":4}`))
	if err != nil || a.Seq != 1 || a.Workers != 2 || a.Iter != 4 {
		t.Errorf("ParseAck = %+v, %v", a, err)
	}
	if a, err := ParseAck([]byte(`{"seq":2,"error":"no loader"}`)); err != nil || a.Error != "no loader" {
		t.Errorf("an error answer: %+v, %v", a, err)
	}
	if _, err := ParseAck([]byte(`{"seq":1,"workers":2,"ts":0,"iter":4}`)); err == nil {
		t.Error("an answer without its time was accepted")
	}
}

// What AppendControl writes, ParseControl reads back.
func TestAppendControlRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "control.jsonl")
	w, rp := 3, true
	for _, c := range []ControlCommand{{Seq: 1, Workers: &w}, {Seq: 2, Replay: &rp}} {
		if err := AppendControl(path, c); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := NewLineReader(path).Next()
	if err != nil || len(lines) != 2 {
		t.Fatalf("lines %q, %v", lines, err)
	}
	c1, err1 := ParseControl(lines[0])
	c2, err2 := ParseControl(lines[1])
	if err1 != nil || err2 != nil || *c1.Workers != 3 || c1.Replay != nil || !*c2.Replay || c2.Workers != nil {
		t.Errorf("read back %+v (%v), %+v (%v)", c1, err1, c2, err2)
	}
}
