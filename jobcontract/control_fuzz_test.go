package jobcontract

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unicode"
)

// printableMessage reports whether an error message is safe for a
// terminal: no control character, no bidirectional override, bounded.
func printableMessage(s string) bool {
	if len(s) > 2*MaxControlLine {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}

// FuzzControlChannel is the profiler's end of the control channel fed
// what a job could write: whatever the answer file holds, split across two
// reads, the reader hands out complete lines of at most MaxControlLine
// bytes, the parsers never panic and their errors are escaped and bounded;
// a command that parses is written by the ControlWriter and read back as
// the same command.
func FuzzControlChannel(f *testing.F) {
	for _, s := range []string{
		`{"seq":0,"workers":1,"ts":1.7e9,"iter":0}` + "\n" + `{"seq":1,"workers":4,"ts":1.7e9,"iter":9}` + "\n",
		`{"seq":2,"error":"` + "\x1b[31mred\u202e" + `"}` + "\n",
		`{"seq":1,"workers":2,"replay":true}` + "\n" + `{"seq":1,"workers":2,"replay":fal`,
		`{"seq":1,"seq":2}` + "\n\n\n" + `{"seq":-1}` + "\n" + `[1,2]` + "\n",
		`{"seq":9223372036854775807,"workers":1e400}` + "\n",
		string(bytes.Repeat([]byte("x"), MaxControlLine+2)) + "\n",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		dir := t.TempDir()
		path := filepath.Join(dir, "ack")
		split := min(int(cut), len(data))
		if err := os.WriteFile(path, data[:split], 0o644); err != nil {
			t.Fatal(err)
		}
		r := NewLineReader(path)
		lines, err1 := r.Next()
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(data[split:])
		fh.Close()
		more, err2 := r.Next()
		for _, err := range []error{err1, err2} {
			if err != nil && !printableMessage(err.Error()) {
				t.Errorf("reader error not escaped or bounded: %q", err)
			}
		}
		w, err := CreateControl(filepath.Join(dir, "control"))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		back := NewLineReader(w.Path())
		for _, l := range append(lines, more...) {
			if len(l) > MaxControlLine || len(l) == 0 {
				t.Fatalf("a line of %d bytes handed out", len(l))
			}
			if _, err := ParseAck(l); err != nil && !printableMessage(err.Error()) {
				t.Errorf("ParseAck error not escaped or bounded: %q", err)
			}
			c, err := ParseControl(l)
			if err != nil {
				if !printableMessage(err.Error()) {
					t.Errorf("ParseControl error not escaped or bounded: %q", err)
				}
				continue
			}
			if err := w.Append(c); err != nil {
				t.Fatalf("Append(%+v): %v", c, err)
			}
			got, err := back.Next()
			if err != nil || len(got) != 1 {
				t.Fatalf("read back %q, %v; want one line", got, err)
			}
			c2, err := ParseControl(got[0])
			if err != nil || !reflect.DeepEqual(c, c2) {
				t.Errorf("round trip of %q: %+v (%v), want %+v", l, c2, err, c)
			}
		}
	})
}
