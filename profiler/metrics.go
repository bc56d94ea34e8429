package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Iteration is one line of a job's metrics stream (docs/job-contract.md).
type Iteration struct {
	Iter          int      `json:"iter"`
	Samples       int      `json:"samples"`
	DataWaitS     float64  `json:"data_wait_s"`
	StepS         float64  `json:"step_s"`
	TS            float64  `json:"ts"`
	Epoch         *int     `json:"epoch,omitempty"`
	StepIntendedS *float64 `json:"step_intended_s,omitempty"`
	Emulated      bool     `json:"emulated,omitempty"`
}

// ParseIteration decodes and checks one metrics line. Errors name the key.
func ParseIteration(line []byte) (Iteration, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Iteration{}, fmt.Errorf("not a JSON object: %w", err)
	}
	for _, k := range []string{"iter", "samples", "data_wait_s", "step_s", "ts"} {
		if _, ok := raw[k]; !ok {
			return Iteration{}, fmt.Errorf("missing key %q", k)
		}
	}
	var it Iteration
	if err := json.Unmarshal(line, &it); err != nil {
		return Iteration{}, err
	}
	switch {
	case it.Iter < 0:
		return it, fmt.Errorf("iter: %d is negative", it.Iter)
	case it.Samples < 0:
		return it, fmt.Errorf("samples: %d is negative", it.Samples)
	case bad(it.DataWaitS):
		return it, fmt.Errorf("data_wait_s: %v is not a non-negative number", it.DataWaitS)
	case bad(it.StepS):
		return it, fmt.Errorf("step_s: %v is not a non-negative number", it.StepS)
	case bad(it.TS) || it.TS == 0:
		return it, fmt.Errorf("ts: %v is not a positive Unix time", it.TS)
	case it.Epoch != nil && *it.Epoch < 0:
		return it, fmt.Errorf("epoch: %d is negative", *it.Epoch)
	}
	return it, nil
}

func bad(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }

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
