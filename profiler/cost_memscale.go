package profiler

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Memory points at scale (Config.MemScale, docs/cost.md). A job that reads
// its dataset in shuffled passes hits the page cache with a probability
// set by the ratio of the cache it is given to the bytes it reads: a limit
// L on a dataset of D bytes, of which the job's own anonymous memory A
// takes its part, leaves about L − A of cache for D, a hit fraction of
// min(1, (L − A)/D). A random sample of s·D bytes under a limit of
// A + s·(L − A) has the same fraction, and a pass over it costs s of a full
// pass: the memory point is measured on the sample.

// dataset is the data a profiled job reads: its size, its geometry in
// iterations (a pass is a sample per file at the batch), and, for scaled
// memory points, its sample (docs/cost.md, --mem-scale).
type dataset struct {
	cfg     *Config
	deps    *Deps
	rec     *recorder
	workDir string // where the sample is made
	// datasetBytes and datasetFiles are the dataset's size (0 without one).
	datasetBytes int64
	datasetFiles int
	scaled       *scaledData // the sample for scaled memory points, once made
	// warmSample: the unlimited column reads the sample too, warm (the
	// dataset does not fit in half the host's memory; cost_memscale_auto.go).
	warmSample bool
}

// scaledData is the dataset's sample for scaled memory points.
type scaledData struct {
	dir     string
	bytes   int64
	files   int
	frac    float64 // bytes / the dataset's bytes
	anon    int64   // the job's own memory A, from the points measured before
	linked  bool    // hard links (else copies)
	noteSet bool
}

// scaledPoint reports whether pt is measured on the sample.
func (s *dataset) scaledPoint(pt point) bool {
	m := s.cfg.MemScale
	return m > 0 && m < 1 && (pt.memLimit > 0 || s.warmSample) && !pt.synthetic && s.cfg.DataDir != ""
}

// dataDirFor is the dataset directory pt reads: the sample at a scaled
// memory point, else the dataset.
func (s *dataset) dataDirFor(pt point) string {
	if s.scaledPoint(pt) && s.scaled != nil {
		return s.scaled.dir
	}
	return s.cfg.DataDir
}

// memLimitFor is the memory limit pt runs under: A + f·(L − A) at a scaled
// point, where f is the sample's share of the dataset's bytes and A the
// job's own memory; L itself when L ≤ A (the job does not fit: scaling
// would not change that) and elsewhere.
func (s *dataset) memLimitFor(pt point) int64 {
	if !s.scaledPoint(pt) || s.scaled == nil {
		return pt.memLimit
	}
	return ScaledMemLimit(pt.memLimit, s.scaled.anon, s.scaled.frac)
}

// ScaledMemLimit is A + f·(L − A) rounded up to a 4KiB page, or L when
// L ≤ A or f is not in (0,1). Units: bytes.
func ScaledMemLimit(limit, anon int64, frac float64) int64 {
	if limit <= anon || frac <= 0 || frac >= 1 {
		return limit
	}
	v := anon + int64(frac*float64(limit-anon))
	return (v + 4095) / 4096 * 4096
}

// itersPerEpochAt is itersPerEpoch for the data pt reads.
func (s *dataset) itersPerEpochAt(pt point) int {
	if s.scaledPoint(pt) && s.scaled != nil && s.cfg.Batch > 0 {
		return (s.scaled.files + s.cfg.Batch - 1) / s.cfg.Batch
	}
	return s.itersPerEpoch()
}

// prepareScaled makes the sample before the first scaled point and fixes
// the job's own memory A from the cells measured so far (the largest
// anonymous memory of any of them; 0 when none was read, with a warning).
func (s *dataset) prepareScaled(pt point) error {
	if !s.scaledPoint(pt) {
		return nil
	}
	if s.scaled != nil {
		s.scaled.anon = s.anonSoFar()
		s.warnNoAnon(pt)
		return nil
	}
	dir := filepath.Join(s.workDir, "data-sample")
	sd, err := sampleDataset(s.cfg.DataDir, dir, s.cfg.MemScale, s.datasetBytes)
	if err != nil {
		return fmt.Errorf("mem-scale: sample the dataset: %w", err)
	}
	sd.anon = s.anonSoFar()
	if !sd.linked {
		s.rec.warnf("mem-scale: the sample is a copy (the work directory is on another file system than the dataset)")
	}
	s.scaled = sd
	s.warnNoAnon(pt)
	if s.deps.Progress != nil {
		s.deps.Progress.Note(fmt.Sprintf("sample: %.1f%% of the dataset (%d files, %s); each limited point's limit is scaled around the job's own memory as measured before it (%s so far)",
			100*sd.frac, sd.files, units.FormatBytes(sd.bytes), units.FormatBytes(sd.anon)))
	}
	return nil
}

// anonSoFar is the job's own memory A: the largest anonymous memory of
// the points measured so far (0: none read it).
func (s *dataset) anonSoFar() int64 {
	var a int64
	for _, c := range s.rec.prof.Cells {
		if c.Measured && c.Stats != nil {
			a = max(a, c.Stats.MemAnonBytes)
		}
	}
	return a
}

// warnNoAnon warns when a limited point is scaled with A unknown.
func (s *dataset) warnNoAnon(pt point) {
	if s.scaled.anon == 0 && pt.memLimit > 0 {
		s.rec.warnf("mem-scale: the job's own memory is not known yet (no measured point read it): limits are scaled whole, which understates them")
	}
}

// markScaled records on a scaled point's cell what it ran on.
func (s *dataset) markScaled(pt point, c *sensitivity.Cell) {
	if !s.scaledPoint(pt) || s.scaled == nil || c.Stats == nil {
		return
	}
	c.Stats.MemScale = s.scaled.frac
	c.Stats.ScaledMemLimitBytes = s.memLimitFor(pt)
}

// sampleDataset makes dst a sample of the files under src: each file is
// kept with probability frac, decided by a hash of its path (the same
// sample every run), in its own relative directory (class folders stay
// class folders). Files are hard-linked, or copied where dst is on another
// file system. totalBytes is src's size, for the sample's share.
func sampleDataset(src, dst string, frac float64, totalBytes int64) (*scaledData, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	sd := &scaledData{dir: dst, linked: true}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if !keepInSample(rel, frac) {
			return nil
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		linked, err := linkOrCopy(path, to)
		if err != nil {
			return err
		}
		sd.linked = sd.linked && linked
		info, err := d.Info()
		if err != nil {
			return err
		}
		sd.bytes += info.Size()
		sd.files++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sd.files == 0 {
		return nil, fmt.Errorf("a %.3g sample of %s holds no file: raise the scale", frac, src)
	}
	if totalBytes > 0 {
		sd.frac = float64(sd.bytes) / float64(totalBytes)
	}
	return sd, nil
}

// keepInSample decides a file's membership from its relative path: the
// first 8 bytes of its SHA-256, as a fraction of 2^64, below frac (FNV's
// high bits hardly move between short names like s00, s01).
func keepInSample(rel string, frac float64) bool {
	sum := sha256.Sum256([]byte(rel))
	return float64(binary.BigEndian.Uint64(sum[:8]))/float64(^uint64(0)) < frac
}

// linkOrCopy hard-links src at dst, or copies it across file systems.
func linkOrCopy(src, dst string) (linked bool, err error) {
	err = os.Link(src, dst)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
		return false, err
	}
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	return false, out.Close()
}

// itersPerEpoch returns how many iterations one pass over the dataset takes,
// or 0 when unknown.
func (s *dataset) itersPerEpoch() int {
	if s.datasetFiles <= 0 || s.cfg.Batch <= 0 {
		return 0
	}
	return (s.datasetFiles + s.cfg.Batch - 1) / s.cfg.Batch
}
