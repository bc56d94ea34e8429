package jobcontract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// Tailer reads a metrics file that a running job appends to. It returns only
// complete lines, remembers where it stopped, and tolerates the file not
// existing yet. Malformed lines are counted and the first few kept as
// errors, never fatal here: one bad line must not lose a point. Whether a
// stream is broken as a whole is the caller's decision (Broken).
//
// The job owns the file, so the tailer trusts nothing about it: it is
// opened without following a symlink and must be a regular file (a FIFO
// or a link to another file is an error, not read), it is read in chunks,
// and a line longer than MaxLineBytes is a bad line whose bytes past the
// bound are skipped, never held: the tailer's memory does not grow with
// what the job writes.
type Tailer struct {
	path    string
	off     int64
	partial []byte // the unterminated line so far, at most MaxLineBytes
	// partialLen is the unterminated line's length, bytes skipped included.
	partialLen int64
	lineNo     int
	// Lines counts the complete non-empty lines read, good or bad.
	Lines int
	// Bad counts malformed lines; Errors holds the first few.
	Bad    int
	Errors []string
	// FirstBad is the first malformed line as it was written, quoted and
	// truncated to MaxQuotedLine bytes, with its line number and error:
	// `line 3: "garbage" (not a JSON object: ...)`.
	FirstBad string
}

// NewTailer tails path.
func NewTailer(path string) *Tailer { return &Tailer{path: path} }

const maxTailErrors = 5

// MaxQuotedLine is how many bytes of a bad line an error quotes.
const MaxQuotedLine = 120

// MaxLineBytes bounds a metrics line: the contract's lines are about 100
// bytes, so a longer one is not a metrics line (ErrLineTooLong).
const MaxLineBytes = 64 << 10

// ErrLineTooLong is the error of a line longer than MaxLineBytes.
var ErrLineTooLong = fmt.Errorf("longer than %d KiB, the bound of a metrics line", MaxLineBytes>>10)

// tailChunk is how much Poll reads at a time.
const tailChunk = 64 << 10

// MaxPollBytes bounds what one Poll reads (about 80,000 metrics lines): a
// job that writes faster than the profiler polls is read at this pace, its
// backlog left in its file, so what one Poll returns is bounded by design,
// not by the job's pace.
const MaxPollBytes = 8 << 20

// OpenJobFile opens a file that a job wrote, for reading: never through a
// symlink (a job could point one at a file only root may read) and only a
// regular file (a FIFO would block the reader, a device never end).
func OpenJobFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: a file the job writes is not followed", path)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%v): a file the job writes must be one", path, st.Mode().Type())
	}
	return f, nil
}

// Poll returns the iterations completed since the last call, reading at
// most MaxPollBytes of the file: the next call goes on from there.
func (t *Tailer) Poll() ([]Iteration, error) {
	f, err := OpenJobFile(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Iteration
	buf := make([]byte, tailChunk)
	for read := 0; ; {
		n, err := f.ReadAt(buf, t.off)
		t.off += int64(n)
		read += n
		out = t.scan(buf[:n], out)
		if err == io.EOF || n == 0 || read >= MaxPollBytes {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// scan splits data into lines, continuing the unterminated one.
func (t *Tailer) scan(data []byte, out []Iteration) []Iteration {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		part := data
		if i >= 0 {
			part = data[:i]
		}
		t.partialLen += int64(len(part))
		if room := MaxLineBytes + 1 - len(t.partial); room > 0 {
			t.partial = append(t.partial, part[:min(room, len(part))]...)
		}
		if i < 0 {
			break
		}
		data = data[i+1:]
		out = t.line(out)
	}
	return out
}

// line ends the unterminated line and parses it.
func (t *Tailer) line(out []Iteration) []Iteration {
	t.lineNo++
	long := t.partialLen > MaxLineBytes
	line := bytes.TrimSpace(t.partial)
	t.partial, t.partialLen = t.partial[:0], 0
	if len(line) == 0 && !long {
		return out
	}
	t.Lines++
	if long {
		t.bad(line, ErrLineTooLong)
		return out
	}
	it, err := ParseIteration(line)
	if err != nil {
		t.bad(line, err)
		return out
	}
	return append(out, it)
}

func (t *Tailer) bad(line []byte, err error) {
	t.Bad++
	if len(t.Errors) < maxTailErrors {
		t.Errors = append(t.Errors, fmt.Sprintf("metrics line %d: %v", t.lineNo, err))
	}
	if t.FirstBad == "" {
		t.FirstBad = fmt.Sprintf("line %d: %s (%v)", t.lineNo, QuoteLine(line), err)
	}
}

// Wrote reports whether the job wrote anything but white space to its
// stream, a partial last line included.
func (t *Tailer) Wrote() bool {
	return t.Lines > 0 || len(bytes.TrimSpace(t.partial)) > 0
}

// Broken says why the stream read so far cannot be trusted, or "" when it
// can: the job wrote something but no line of it parsed (good is the number
// of lines that did), or more of its lines are malformed than not. The
// reason quotes the first bad line, or the unterminated text when no line
// was ever completed.
func (t *Tailer) Broken(good int) string {
	switch {
	case !t.Wrote():
		return ""
	case t.Lines == 0:
		return fmt.Sprintf("the metrics stream has no complete line (%d bytes without a newline, starting %s)",
			t.partialLen, QuoteLine(bytes.TrimSpace(t.partial)))
	case good == 0:
		return fmt.Sprintf("none of the %d metrics lines could be read; first bad %s", t.Lines, t.FirstBad)
	case t.Bad > good:
		return fmt.Sprintf("%d of the %d metrics lines could not be read; first bad %s", t.Bad, t.Lines, t.FirstBad)
	}
	return ""
}

// QuoteLine quotes a line for an error message, truncated to MaxQuotedLine
// bytes ("…" marks the cut).
func QuoteLine(line []byte) string { return QuoteN(line, MaxQuotedLine) }

// QuoteN quotes what a job or a file wrote for a message that may reach a
// terminal: Go-quoted, so control characters, escape sequences and
// bidirectional overrides are written as escapes (\x1b, \u202e), never
// acted on; and cut to n bytes ("…" marks the cut), so a 100 KB line costs
// n bytes.
func QuoteN(line []byte, n int) string {
	if len(line) > n {
		return strconv.Quote(string(line[:n])) + "…"
	}
	return strconv.Quote(string(line))
}
