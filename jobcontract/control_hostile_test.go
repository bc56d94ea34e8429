package jobcontract

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func victimFile(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(v, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func victimIntact(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "precious\n" {
		t.Errorf("victim %s holds %q (%v), want it untouched", v, b, err)
	}
}

// within fails the test if f does not return within 5 s: an open of a
// FIFO that waits for its other end never returns.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked (a FIFO waited on?)", what)
		return nil
	}
}

// A job swaps the command file the profiler made for each thing it could
// put there; the next command is refused with ErrControlReplaced, nothing
// is written through a link, no file is made where a dangling link
// points, and a FIFO is not waited on.
func TestControlWriter_RefusesAReplacedFile(t *testing.T) {
	w3 := 3
	cmd := ControlCommand{Seq: 1, Workers: &w3}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path, victim string)
		want  string
	}{
		{"symlink", func(t *testing.T, p, v string) { mustDo(t, os.Remove(p), os.Symlink(v, p)) }, "is now a symlink"},
		{"dangling symlink", func(t *testing.T, p, v string) {
			mustDo(t, os.Remove(p), os.Symlink(filepath.Join(filepath.Dir(v), "made-by-root"), p))
		}, "is now a symlink"},
		{"fifo", func(t *testing.T, p, v string) { mustDo(t, os.Remove(p), syscall.Mkfifo(p, 0o666)) }, "is now a FIFO"},
		{"directory", func(t *testing.T, p, v string) { mustDo(t, os.Remove(p), os.Mkdir(p, 0o755)) }, "is now a directory"},
		{"hard link to another file", func(t *testing.T, p, v string) { mustDo(t, os.Remove(p), os.Link(v, p)) }, "is now another file"},
		{"renamed over", func(t *testing.T, p, v string) {
			o := p + ".other"
			mustDo(t, os.WriteFile(o, nil, 0o644), os.Rename(o, p))
		}, "is now another file"},
		{"linked elsewhere", func(t *testing.T, p, v string) { mustDo(t, os.Link(p, p+".copy")) }, "has 2 links"},
		{"removed", func(t *testing.T, p, v string) { mustDo(t, os.Remove(p)) }, "was removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "control.jsonl")
			w, err := CreateControl(path)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Append(cmd); err != nil {
				t.Fatalf("the first command: %v", err)
			}
			v := victimFile(t)
			tc.plant(t, path, v)
			err = within(t, "Append", func() error { return w.Append(ControlCommand{Seq: 2, Workers: &w3}) })
			if !errors.Is(err, ErrControlReplaced) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Append after the swap: %v, want %v saying %q", err, ErrControlReplaced, tc.want)
			}
			victimIntact(t, v)
			if _, err := os.Lstat(filepath.Join(filepath.Dir(v), "made-by-root")); err == nil {
				t.Error("a file was made where the dangling link points")
			}
		})
	}
}

func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// CreateControl makes a new file or nothing: whatever is at the name (a
// link, dangling or not, a FIFO, a file) is refused, not opened.
func TestCreateControl_NeverOpensWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	v := victimFile(t)
	plants := map[string]func(string) error{
		"symlink":  func(p string) error { return os.Symlink(v, p) },
		"dangling": func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
		"fifo":     func(p string) error { return syscall.Mkfifo(p, 0o666) },
		"file":     func(p string) error { return os.WriteFile(p, []byte("x\n"), 0o644) },
	}
	for name, plant := range plants {
		p := filepath.Join(dir, name)
		mustDo(t, plant(p))
		err := within(t, "CreateControl", func() error { _, err := CreateControl(p); return err })
		if err == nil {
			t.Errorf("%s: CreateControl succeeded", name)
		}
	}
	victimIntact(t, v)
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a file was made where the dangling link points")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "file")); string(b) != "x\n" {
		t.Errorf("an existing file was written: %q", b)
	}
}

// The answer file is the job's: a symlink is not read through (its target
// is not quoted in an error), a FIFO or a directory is refused without
// waiting, and the lines one call hands out are bounded.
func TestLineReader_RefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	mustDo(t, os.WriteFile(secret, []byte(`{"seq":1,"error":"root-only secret"}`+"\n"), 0o600))
	link, fifo, sub := filepath.Join(dir, "link"), filepath.Join(dir, "fifo"), filepath.Join(dir, "sub")
	mustDo(t, os.Symlink(secret, link), syscall.Mkfifo(fifo, 0o666), os.Mkdir(sub, 0o755))
	for _, p := range []string{link, fifo, sub} {
		var lines [][]byte
		err := within(t, "Next", func() error { var err error; lines, err = NewLineReader(p).Next(); return err })
		if err == nil || len(lines) > 0 || strings.Contains(err.Error(), "secret\"") {
			t.Errorf("%s: %q, %v; want a refusal, nothing read", p, lines, err)
		}
	}
}

// A job that writes a megabyte-long complete line is refused, whatever
// the read's size; one call reads at most maxLineRead bytes.
func TestLineReader_BoundsItsLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ack")
	long := append(bytes.Repeat([]byte("x"), MaxControlLine+1), '\n')
	mustDo(t, os.WriteFile(path, long, 0o644))
	if _, err := NewLineReader(path).Next(); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a complete line of %d bytes: %v, want it refused", len(long), err)
	}
	many := bytes.Repeat([]byte(`{"seq":1,"workers":1,"ts":1.7e9,"iter":1}`+"\n"), 3*maxLineRead/40)
	mustDo(t, os.WriteFile(path, many, 0o644))
	r := NewLineReader(path)
	lines, err := r.Next()
	if err != nil || r.off > maxLineRead || len(lines) == 0 {
		t.Fatalf("one call read %d bytes (%d lines, %v), want at most %d", r.off, len(lines), err, maxLineRead)
	}
	total := len(lines)
	for range 10 {
		l, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		total += len(l)
	}
	if want := bytes.Count(many, []byte("\n")); total != want {
		t.Errorf("%d lines read in all, want %d: none lost to the bound", total, want)
	}
}

// The job's end writes its answers (and a harness its commands) without
// following a link, waiting on a FIFO or writing into a directory.
func TestAppendAck_NeverFollowsOrWaits(t *testing.T) {
	dir := t.TempDir()
	v := victimFile(t)
	link, dangling, fifo := filepath.Join(dir, "link"), filepath.Join(dir, "dangling"), filepath.Join(dir, "fifo")
	mustDo(t, os.Symlink(v, link), os.Symlink(filepath.Join(dir, "nowhere"), dangling), syscall.Mkfifo(fifo, 0o666))
	for _, p := range []string{link, dangling, fifo, dir} {
		err := within(t, "AppendAck", func() error { return AppendAck(p, ControlAck{Seq: 1, Workers: 1, TS: 1.7e9}) })
		if err == nil {
			t.Errorf("AppendAck(%s) succeeded", p)
		}
	}
	victimIntact(t, v)
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a file was made where the dangling link points")
	}
	// A FIFO with a reader (the job's own, say) is refused too, not written.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := AppendControl(fifo, ControlCommand{Seq: 1}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("AppendControl to a FIFO with a reader: %v, want a refusal", err)
	}
}

// A job's text is escaped and cut before it reaches a message.
func TestQuoteN_EscapesAndBounds(t *testing.T) {
	got := QuoteN([]byte("\x1b]0;owned\a\u202eevil\r\n"+strings.Repeat("y", 100)), 40)
	if strings.ContainsAny(got, "\x1b\a\r\n\u202e") || !strings.Contains(got, `\x1b`) || !strings.Contains(got, `\u202e`) || !strings.HasSuffix(got, "…") {
		t.Errorf("QuoteN = %q, want control characters and bidi overrides escaped, and the cut marked", got)
	}
	if len(got) > 80 {
		t.Errorf("QuoteN kept %d bytes of a 40-byte bound", len(got))
	}
}
