package jobcontract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// The control channel (docs/job-contract.md, "The control channel"): the
// profiler changes a running job's loader in place, so that one launch
// serves every point of a profile.
//
// The profiler appends commands, one JSON object a line, to the file
// $SYNERGY_CONTROL_FILE; the job looks for new complete lines between
// batches of its measured loader (a stat, and a read when it grew) and
// applies them in order. It answers each, and says once that it listens,
// by appending one JSON line to $SYNERGY_CONTROL_ACK_FILE. Both files live
// in the point's metrics directory, so container runners mount them as
// they mount the metrics stream.
const (
	// EnvControlFile names the file the profiler appends commands to.
	EnvControlFile = "SYNERGY_CONTROL_FILE"
	// EnvControlAckFile names the file the job appends its answers to.
	EnvControlAckFile = "SYNERGY_CONTROL_ACK_FILE"
)

// ControlCommand is one line of the control file. Fields left out keep the
// job's current setting.
type ControlCommand struct {
	// Seq numbers the commands from 1; the answer carries it.
	Seq int `json:"seq"`
	// Workers is the loader's new worker count: the running pass goes on,
	// from the batch after the last one handed out, with this many
	// workers; the old ones are shut down.
	Workers *int `json:"workers,omitempty"`
	// Replay true hands one batch to the training loop again and again,
	// the loader idle (the step alone, as the step-only run measures it):
	// the batch just delivered, or the next one, for a job that keeps no
	// batch beyond its step; false goes back to the loader.
	Replay *bool `json:"replay,omitempty"`
	// Threads is the job's new intra-op thread count, as a launch at that
	// many cores sets it (OMP_NUM_THREADS and the like, and torch's
	// set_num_threads).
	Threads *int `json:"threads,omitempty"`
}

// ControlAck is one line of the answer file.
type ControlAck struct {
	// Seq is the command answered; 0 is the job's hello, written when its
	// measured loader delivered its first batch: from then on it listens.
	Seq int `json:"seq"`
	// Workers and Replay are the settings in force after the command.
	Workers int  `json:"workers"`
	Replay  bool `json:"replay,omitempty"`
	// Threads is the intra-op threads the job computes with (torch's
	// get_num_threads()), as it read them back; 0: it does not say (a job
	// whose threads no variable sets).
	Threads int `json:"threads,omitempty"`
	// TS is when the first batch under the new settings reached the
	// training loop (Unix seconds, the metrics stream's clock), and Iter
	// the stream's iteration ("iter") that consumed it.
	TS   float64 `json:"ts"`
	Iter int     `json:"iter"`
	// Error says why the command was not applied; the job goes on as it
	// was.
	Error string `json:"error,omitempty"`
	// Note says how it was applied where that matters (e.g. an iterable
	// dataset whose pass began again).
	Note string `json:"note,omitempty"`
}

// AppendControl appends one command line to the file at path.
func AppendControl(path string, c ControlCommand) error {
	return appendJSONLine(path, c)
}

// AppendAck appends one answer line to the file at path.
func AppendAck(path string, a ControlAck) error {
	return appendJSONLine(path, a)
}

func appendJSONLine(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return err
	}
	// One write: a reader never sees half a line followed by another.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MaxControlLine bounds one line of either file.
const MaxControlLine = 4 << 10

// LineReader reads the complete lines appended to a file since its last
// call: a partial last line waits for its newline. It never follows a
// symlink into the profiler's files when opened with OpenJobFile.
type LineReader struct {
	path string
	off  int64
	part []byte
}

// NewLineReader reads the file at path from its start.
func NewLineReader(path string) *LineReader { return &LineReader{path: path} }

// Next returns the complete lines appended since the last call; a file
// not there yet holds none. A line longer than MaxControlLine is an error.
func (r *LineReader) Next() ([][]byte, error) {
	st, err := os.Stat(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Size() <= r.off {
		return nil, nil
	}
	f, err := OpenJobFile(r.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, min(st.Size()-r.off, 1<<20))
	n, err := f.ReadAt(buf, r.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	r.off += int64(n)
	r.part = append(r.part, buf[:n]...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(r.part, '\n')
		if i < 0 {
			break
		}
		if l := bytes.TrimSpace(r.part[:i]); len(l) > 0 {
			lines = append(lines, append([]byte(nil), l...))
		}
		r.part = r.part[i+1:]
	}
	if len(r.part) > MaxControlLine {
		return lines, fmt.Errorf("%s: a line longer than %d bytes", r.path, MaxControlLine)
	}
	return lines, nil
}

// ParseControl decodes one command line; errors name the field.
func ParseControl(line []byte) (ControlCommand, error) {
	var c ControlCommand
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("control line %s: %w", QuoteLine(line), err)
	}
	switch {
	case c.Seq < 1:
		return c, fmt.Errorf("control line %s: seq %d is not a positive number", QuoteLine(line), c.Seq)
	case c.Workers != nil && *c.Workers < 0:
		return c, fmt.Errorf("control line %s: workers %d is negative", QuoteLine(line), *c.Workers)
	case c.Threads != nil && *c.Threads < 1:
		return c, fmt.Errorf("control line %s: threads %d is not positive", QuoteLine(line), *c.Threads)
	}
	return c, nil
}

// ParseAck decodes one answer line; errors name the field.
func ParseAck(line []byte) (ControlAck, error) {
	var a ControlAck
	if err := json.Unmarshal(line, &a); err != nil {
		return a, fmt.Errorf("control answer %s: %w", QuoteLine(line), err)
	}
	switch {
	case a.Seq < 0:
		return a, fmt.Errorf("control answer %s: seq %d is negative", QuoteLine(line), a.Seq)
	case a.Error == "" && (a.TS <= 0 || a.Iter < 0 || a.Workers < 0 || a.Threads < 0):
		return a, fmt.Errorf("control answer %s: ts, iter, workers or threads out of range", QuoteLine(line))
	}
	return a, nil
}
