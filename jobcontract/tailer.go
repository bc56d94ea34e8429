package jobcontract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Tailer reads a metrics file that a running job appends to. It returns only
// complete lines, remembers where it stopped, and tolerates the file not
// existing yet. Malformed lines are counted and the first few kept as
// errors, never fatal: one bad line must not lose a point.
type Tailer struct {
	path    string
	off     int64
	partial []byte
	lineNo  int
	// Bad counts malformed lines; Errors holds the first few.
	Bad    int
	Errors []string
}

// NewTailer tails path.
func NewTailer(path string) *Tailer { return &Tailer{path: path} }

const maxTailErrors = 5

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
		it, err := ParseIteration(line)
		if err != nil {
			t.Bad++
			if len(t.Errors) < maxTailErrors {
				t.Errors = append(t.Errors, fmt.Sprintf("metrics line %d: %v", t.lineNo, err))
			}
			continue
		}
		out = append(out, it)
	}
	t.partial = append(t.partial[:0], data...)
	return out, nil
}
