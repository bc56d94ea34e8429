package jobcontract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Tailer reads a metrics file that a running job appends to. It returns only
// complete lines, remembers where it stopped, and tolerates the file not
// existing yet. Malformed lines are counted and the first few kept as
// errors, never fatal here: one bad line must not lose a point. Whether a
// stream is broken as a whole is the caller's decision (Broken).
type Tailer struct {
	path    string
	off     int64
	partial []byte
	lineNo  int
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

// Poll returns the iterations completed since the last call.
func (t *Tailer) Poll() ([]Iteration, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	t.off += int64(len(data))
	data = append(t.partial, data...)
	var out []Iteration
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		t.lineNo++
		if len(line) == 0 {
			continue
		}
		t.Lines++
		it, err := ParseIteration(line)
		if err != nil {
			t.bad(line, err)
			continue
		}
		out = append(out, it)
	}
	t.partial = append(t.partial[:0], data...)
	return out, nil
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

// Bytes reports how many bytes of the stream were read so far.
func (t *Tailer) Bytes() int64 { return t.off }

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
			len(t.partial), QuoteLine(bytes.TrimSpace(t.partial)))
	case good == 0:
		return fmt.Sprintf("none of the %d metrics lines could be read; first bad %s", t.Lines, t.FirstBad)
	case t.Bad > good:
		return fmt.Sprintf("%d of the %d metrics lines could not be read; first bad %s", t.Bad, t.Lines, t.FirstBad)
	}
	return ""
}

// QuoteLine quotes a line for an error message, truncated to MaxQuotedLine
// bytes ("…" marks the cut).
func QuoteLine(line []byte) string {
	if len(line) > MaxQuotedLine {
		return strconv.Quote(string(line[:MaxQuotedLine])) + "…"
	}
	return strconv.Quote(string(line))
}
