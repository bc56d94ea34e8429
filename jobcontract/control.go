package jobcontract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
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

// ControlWriter is the profiler's end of the command file. The file lies
// in a directory the job can write (and, under a container runner, the
// container's user owns), so it is never opened by its name once the job
// runs: the profiler creates it before the launch (CreateControl) and
// writes every command through the descriptor it holds. Before each write
// it checks that the name still names that file: a job that replaced it
// (a symlink, dangling or not, a FIFO, a directory, another file) or
// linked it elsewhere gets an error (ErrControlReplaced), not a write
// through its link, and the command is not sent.
type ControlWriter struct {
	f    *os.File
	path string
	dev  uint64
	ino  uint64
}

// ErrControlReplaced is the error of a command file the job replaced.
var ErrControlReplaced = errors.New("the job replaced its control file")

// CreateControl creates the command file at path, which must not exist:
// O_CREAT|O_EXCL|O_NOFOLLOW, so that nothing planted there (a symlink,
// dangling or not, a FIFO) is opened or followed, and no file is created
// anywhere else. It is readable by all (the job reads it) and written only
// through the returned writer.
func CreateControl(path string) (*ControlWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create the control file: %w", err)
	}
	st, err := statOf(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create the control file: %w", err)
	}
	return &ControlWriter{f: f, path: path, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// Path is the file's path, for the job's environment.
func (w *ControlWriter) Path() string { return w.path }

// Append checks that the file at the writer's path is still the one it
// created, with no other link, and appends c to it as one line in one
// write.
func (w *ControlWriter) Append(c ControlCommand) error {
	if err := w.check(); err != nil {
		return err
	}
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(line, '\n'))
	return err
}

// check reports how the path no longer names the writer's file.
func (w *ControlWriter) check() error {
	fi, err := os.Lstat(w.path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s was removed", ErrControlReplaced, w.path)
	}
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || uint64(st.Dev) != w.dev || st.Ino != w.ino {
		return fmt.Errorf("%w: %s is now %s, not the file synergy made (not written through)", ErrControlReplaced, w.path, kindOf(fi.Mode()))
	}
	own, err := statOf(w.f)
	if err != nil {
		return err
	}
	if own.Nlink != 1 {
		return fmt.Errorf("%w: %s has %d links (a hard link was made to it)", ErrControlReplaced, w.path, own.Nlink)
	}
	return nil
}

// Close closes the writer's descriptor.
func (w *ControlWriter) Close() error { return w.f.Close() }

func statOf(f *os.File) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// kindOf names a file's type for an error.
func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "another file"
	}
	return "a " + m.Type().String() + " file"
}

// AppendControl appends one command line to the file at path, for a
// harness that drives a job's end by hand (a job's tests); the profiler
// writes through a ControlWriter. It never follows a symlink or waits on
// a FIFO: an existing file is opened O_NOFOLLOW|O_NONBLOCK and must be a
// regular file; an absent one is created O_EXCL.
func AppendControl(path string, c ControlCommand) error {
	return appendJSONLine(path, c)
}

// AppendAck appends one answer line to the file at path (the job's end;
// the same rules as AppendControl).
func AppendAck(path string, a ControlAck) error {
	return appendJSONLine(path, a)
}

func appendJSONLine(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := openAppend(path)
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

// openAppend opens path to append to: an existing regular file, never
// through a symlink nor waiting on a FIFO, or a new one made O_EXCL.
func openAppend(path string) (*os.File, error) {
	const flags = os.O_WRONLY | os.O_APPEND | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	for range 3 {
		f, err := os.OpenFile(path, flags, 0)
		if errors.Is(err, os.ErrNotExist) {
			f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, os.ErrExist) {
				continue // made between the two opens: open it again
			}
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink: not followed", path)
		}
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("%s is a FIFO, not a regular file", path)
		}
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s is %s, not a regular file", path, kindOf(fi.Mode()))
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s keeps being made and removed", path)
}

// MaxControlLine bounds one line of either file.
const MaxControlLine = 4 << 10

// LineReader reads the complete lines appended to a file since its last
// call: a partial last line waits for its newline. The file is the other
// end's, so it is looked at with lstat and opened with OpenJobFile: never
// through a symlink, never a FIFO or a device. A call reads at most
// maxLineRead bytes: what it holds and returns is bounded whatever the
// writer's pace.
type LineReader struct {
	path string
	off  int64
	part []byte
}

// maxLineRead bounds what one Next reads.
const maxLineRead = 1 << 20

// NewLineReader reads the file at path from its start.
func NewLineReader(path string) *LineReader { return &LineReader{path: path} }

// Next returns the complete lines appended since the last call; a file
// not there yet holds none. A line longer than MaxControlLine is an error.
func (r *LineReader) Next() ([][]byte, error) {
	st, err := os.Lstat(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() <= r.off {
		return nil, nil
	}
	f, err := OpenJobFile(r.path) // refuses what is not a regular file
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, min(max(st.Size()-r.off, 0), maxLineRead))
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
		if i > MaxControlLine {
			return lines, fmt.Errorf("%s: a line longer than %d bytes", r.path, MaxControlLine)
		}
		if l := bytes.TrimSpace(r.part[:i]); len(l) > 0 {
			lines = append(lines, append([]byte(nil), l...))
		}
		r.part = r.part[i+1:]
	}
	r.part = append([]byte(nil), r.part...) // let the read buffer go
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
