package profiler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Fingerprint limits: what the identity of a run reads, so that it stays
// cheap on a dataset of millions of files or a large file argument.
const (
	// FingerprintSampleFiles is how many dataset files contribute their
	// first and last FingerprintEdgeBytes to the fingerprint.
	FingerprintSampleFiles = 32
	FingerprintEdgeBytes   = 1 << 10
	// MaxHashedFileBytes is how much of a file named by the command is
	// hashed (its size is recorded whole).
	MaxHashedFileBytes = 64 << 20
)

// identity returns what this run measures (sensitivity.Identity), with
// the dataset's size and fingerprint from scanDataset.
func (s *sweep) identity(data *sensitivity.DatasetIdentity) (*sensitivity.Identity, error) {
	cfg := &s.cfg
	id := &sensitivity.Identity{
		Version: sensitivity.IdentityVersion,
		Command: append([]string(nil), cfg.Command...),
		Data:    data,
		Runner:  s.deps.Runner.Name(),
		Image:   cfg.Image,
		Grid: sensitivity.GridIdentity{
			CPUs:           sortedUniqueFloats(append([]float64(nil), cfg.CPUs...)),
			MemLimitsBytes: sortedUniqueInts(append([]int64(nil), cfg.MemLimits...)),
			Strategy:       cfg.Strategy, Budget: cfg.Budget, ValidateCells: cfg.ValidateCells,
			Batch: cfg.Batch, GPUs: cfg.GPUs, MaxIterations: cfg.MaxIterations,
			Warmup: cfg.Warmup, MinIterations: cfg.MinIterations, TargetRelCI: cfg.TargetRelCI,
			ReadBPS: cfg.ReadBPS, StallBreakdown: cfg.StallBreakdown,
		},
	}
	for i, arg := range cfg.Command {
		f, err := fileIdentity(i, arg)
		if err != nil {
			return nil, fmt.Errorf("command argument %d (%s): %w", i, arg, err)
		}
		if f != nil {
			id.Files = append(id.Files, *f)
		}
	}
	return id, nil
}

// fileIdentity hashes arg when it names a regular file (the script, a
// config); nil when it names none.
func fileIdentity(i int, arg string) (*sensitivity.FileIdentity, error) {
	if arg == "" || strings.HasPrefix(arg, "-") {
		return nil, nil
	}
	st, err := os.Stat(arg)
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil // not a file here: an interpreter's name, a flag value
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return nil, err
	}
	f, err := openRegularFile(arg, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, MaxHashedFileBytes)); err != nil {
		return nil, err
	}
	return &sensitivity.FileIdentity{Arg: i, Path: abs, Bytes: st.Size(), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// FingerprintDataset measures the dataset under dir and fingerprints its
// contents cheaply: a SHA-256 over every regular file's path relative to
// dir, size and modification time (in walk order), then the first and last
// FingerprintEdgeBytes of FingerprintSampleFiles files spread evenly over
// that order. A renamed, added, removed, resized or touched file changes
// it, and so does an edit in place at either end of a sampled file; an edit
// in the middle of a file that keeps its size and time does not. Errors
// name the data setting.
func FingerprintDataset(dir string) (*sensitivity.DatasetIdentity, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("data: %s is not a directory", dir)
	}
	d := &sensitivity.DatasetIdentity{Path: dir}
	h := sha256.New()
	var files []string
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", rel, info.Size(), info.ModTime().UnixNano())
		d.Bytes += info.Size()
		d.Files++
		files = append(files, path)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, i := range sampleIndexes(len(files), FingerprintSampleFiles) {
		if err := hashEdges(h, files[i]); err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
	}
	d.Fingerprint = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

// sampleIndexes returns k indexes spread evenly over [0, n), first and
// last included (all of them when n <= k).
func sampleIndexes(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for i := range out {
		out[i] = i * (n - 1) / (k - 1)
	}
	return out
}

// openRegularFile opens path for reading (with flags added) if it is a
// regular file when opened, not only when it was listed: a file swapped for
// a FIFO since is refused rather than waited on (O_NONBLOCK), as a dataset
// file swapped for a symlink is (O_NOFOLLOW, where given).
func openRegularFile(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is no longer a regular file", path)
		}
		return nil, err
	}
	return f, nil
}

// hashEdges adds the first and last FingerprintEdgeBytes of path to h.
func hashEdges(h hash.Hash, path string) error {
	f, err := openRegularFile(path, syscall.O_NOFOLLOW)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, FingerprintEdgeBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return err
	}
	h.Write(buf[:n])
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if off := st.Size() - FingerprintEdgeBytes; off > int64(n) {
		if n, err = f.ReadAt(buf, off); err != nil && err != io.EOF {
			return err
		}
		h.Write(buf[:n])
	}
	h.Write([]byte("\x00" + strconv.FormatInt(st.Size(), 10) + "\n"))
	return nil
}

// checkResume refuses to resume a profile whose identity differs from
// this run's, naming every difference. A profile written before
// identities were recorded is compared on what it does record (command,
// runner, image, data path and size, axes, strategy, batch, GPUs,
// iteration cap), with a warning that the contents could not be checked.
func (s *sweep) checkResume(p *sensitivity.Profile, cur *sensitivity.Identity) error {
	was := p.Identity
	if was == nil {
		was = sensitivity.LegacyIdentity(p)
		s.rec.warnf("%s records no identity (written by an older synergy): the script's and the dataset's contents could not be checked on --resume", s.cfg.Out)
	}
	ds := sensitivity.CompareIdentity(was, cur)
	if len(ds) == 0 {
		return nil
	}
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = "  " + d.String()
	}
	return fmt.Errorf("resume: %s measured another job, dataset or grid, and its cells cannot be mixed with this run's (resume with the same settings, or profile into another --out):\n%s",
		s.cfg.Out, strings.Join(lines, "\n"))
}
