package profiler

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
)

// Choosing the scale of memory points (Config.MemScale 0: automatic;
// docs/cost.md). A limited memory point pays a pass over its data from a
// cold cache before it is measured; the rule bounds that pass and keeps
// the sample big enough to behave like the dataset:
//
//  1. time: a pass over f·D bytes at the read bandwidth BW takes at most
//     the allowance per memory point: half the time budget shared by the
//     memory points the strategy may measure, or DefaultPassSeconds
//     without a budget: f_time = allowance · BW / D (1 when BW is unknown);
//  2. memory: the sample, warm, and the largest scaled limit take at most
//     half the host's memory: f_mem = DRAM / (2 · max(D, L_max));
//  3. f = min(f_time, f_mem), raised so that the sample holds at least
//     MinSampleFiles files; an f of NoScaleAbove or more measures at full
//     size (the sample would save less than half a pass);
//  4. access pattern: a sample by files keeps the hit fraction only for
//     shuffled passes over many files. When one file holds more than
//     MaxFileShare of the bytes (one big file, or a few shards, read
//     sequentially or in large runs), or the dataset has too few files for
//     a sample of MinSampleFiles, memory points run at full size and the
//     profile says why.
//
// When the dataset does not fit in half the host's memory, the unlimited
// column (the CPU axis, measured with its data warm) reads the warm
// sample too: the whole dataset could not be held warm.

// Constants of the rule (units in the names).
const (
	DefaultPassSeconds = 60.0 // a memory point's first pass, without a time budget
	MinSampleFiles     = 256  // fewest files a sample may hold
	MaxFileShare       = 0.10 // largest share of the bytes one file may hold
	NoScaleAbove       = 0.5  // a scale at or above this measures at full size
)

// MemScaleInput is what the rule reads.
type MemScaleInput struct {
	DatasetBytes     int64
	DatasetFiles     int
	LargestFileBytes int64
	ReadBytesPerS    float64 // 0: unknown
	MemPoints        int     // limited memory points the strategy may measure
	TimeBudget       time.Duration
	DRAMBytes        int64 // 0: unknown
	MaxLimitBytes    int64 // the largest limited memory point
}

// MemScaleChoice is the rule's answer: Frac 1 measures at full size.
// WarmSample: the unlimited column reads the sample (the dataset does not
// fit in half the host's memory). Reason says which term decided.
type MemScaleChoice struct {
	Frac       float64
	WarmSample bool
	Reason     string
}

// ChooseMemScale applies the rule above.
func ChooseMemScale(in MemScaleInput) MemScaleChoice {
	d := float64(in.DatasetBytes)
	switch {
	case in.DatasetBytes <= 0 || in.DatasetFiles == 0:
		return MemScaleChoice{Frac: 1, Reason: "no dataset to sample"}
	case in.MemPoints == 0:
		return MemScaleChoice{Frac: 1, Reason: "the strategy measures no limited memory point"}
	}
	allowance := DefaultPassSeconds
	why := fmt.Sprintf("%.0f s per memory point's first pass", allowance)
	if in.TimeBudget > 0 {
		allowance = in.TimeBudget.Seconds() / 2 / float64(in.MemPoints)
		why = fmt.Sprintf("half the time budget of %s over %d memory points: %.0f s per first pass", in.TimeBudget, in.MemPoints, allowance)
	}
	f, reason := 1.0, ""
	if in.ReadBytesPerS > 0 {
		pass := d / in.ReadBytesPerS
		if ft := allowance / pass; ft < f {
			f = ft
			reason = fmt.Sprintf("a pass over the %s dataset takes %.0f s at %.0f MB/s; %s",
				units.FormatBytes(in.DatasetBytes), pass, in.ReadBytesPerS/1e6, why)
		}
	}
	warm := in.DRAMBytes > 0 && 2*in.DatasetBytes > in.DRAMBytes
	if in.DRAMBytes > 0 {
		if fm := float64(in.DRAMBytes) / 2 / max(d, float64(in.MaxLimitBytes)); fm < f {
			f = fm
			reason = fmt.Sprintf("the sample and the largest scaled limit must fit in half of this host's %s of memory (dataset %s, largest limit %s)",
				units.FormatBytes(in.DRAMBytes), units.FormatBytes(in.DatasetBytes), units.FormatBytes(in.MaxLimitBytes))
		}
	}
	if share := float64(in.LargestFileBytes) / d; share > MaxFileShare && (f < 1 || warm) {
		return MemScaleChoice{Frac: 1, Reason: fmt.Sprintf(
			"full size: one file holds %.0f%% of the dataset's bytes (few big files, or one read sequentially): a sample by files would not keep the page cache's hit fraction", 100*share)}
	}
	if floor := min(1, float64(MinSampleFiles)/float64(in.DatasetFiles)); f < floor {
		f = floor
		if floor == 1 {
			reason += fmt.Sprintf("; raised to the whole dataset: its %d files are fewer than the %d a sample keeps", in.DatasetFiles, MinSampleFiles)
		} else {
			reason += fmt.Sprintf("; raised to keep %d of the %d files", MinSampleFiles, in.DatasetFiles)
		}
	}
	if f >= NoScaleAbove {
		if reason == "" {
			reason = "a pass over the whole dataset fits the allowance (" + why + ")"
			if in.ReadBytesPerS <= 0 {
				reason = "the read bandwidth is unknown and the dataset fits in memory"
			}
		}
		return MemScaleChoice{Frac: 1, Reason: "full size: " + reason}
	}
	return MemScaleChoice{Frac: f, WarmSample: warm, Reason: reason}
}

// largestFile returns the size of the largest regular file under dir.
func largestFile(dir string) (int64, error) {
	var top int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		top = max(top, info.Size())
		return nil
	})
	return top, err
}

// memPointsBound is how many limited memory points the strategy may
// measure: every limited cell (grid), the memory axis (axes), at most the
// point budget less the CPU axis' two ends (optimistic, capped by
// DefaultBudget under a time budget), none (synergy).
func (s *dataset) memPointsBound() int {
	nc, nm := len(s.rec.prof.Axes.CPUs), len(s.rec.limitedMems())
	switch s.cfg.Strategy {
	case StrategyGrid:
		return nc * nm
	case StrategyAxes:
		return nm
	case StrategySynergy:
		return 0
	}
	if nm == 0 {
		return 0
	}
	return max(1, min(nc*nm, min(s.cfg.Budget, DefaultBudget)-2))
}

// chooseMemScale fixes Config.MemScale for this run: the caller's, or the
// rule's when it gave none (0), and records it with its reason in the
// profile's cost.
func (s *dataset) chooseMemScale() error {
	c := &s.rec.prof.Cost
	if s.cfg.MemScale > 0 {
		c.MemScale, c.MemScaleReason = s.cfg.MemScale, "given"
		s.warmSample = s.cfg.MemScale < 1 && s.deps.Host.DRAMBytes > 0 && 2*s.datasetBytes > s.deps.Host.DRAMBytes
		return nil
	}
	if c.MemScale > 0 { // a resumed profile keeps the scale its cells were measured at
		s.cfg.MemScale = c.MemScale
		s.warmSample = c.MemScale < 1 && s.deps.Host.DRAMBytes > 0 && 2*s.datasetBytes > s.deps.Host.DRAMBytes
		return nil
	}
	in := MemScaleInput{DatasetBytes: s.datasetBytes, DatasetFiles: s.datasetFiles, MemPoints: s.memPointsBound(),
		TimeBudget: s.cfg.TimeBudget, DRAMBytes: s.deps.Host.DRAMBytes, ReadBytesPerS: float64(s.cfg.ReadBPS)}
	if in.ReadBytesPerS <= 0 {
		in.ReadBytesPerS = s.deps.Host.ColdReadMBPerS * 1e6
	}
	if mems := s.rec.limitedMems(); len(mems) > 0 {
		in.MaxLimitBytes = mems[len(mems)-1]
	}
	if s.cfg.DataDir != "" && in.MemPoints > 0 {
		top, err := largestFile(s.cfg.DataDir)
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		in.LargestFileBytes = top
	}
	ch := ChooseMemScale(in)
	s.cfg.MemScale, s.warmSample = ch.Frac, ch.WarmSample
	c.MemScale, c.MemScaleReason = ch.Frac, ch.Reason
	if ch.WarmSample {
		s.rec.warnf("the dataset does not fit in half this host's memory: the unlimited column is measured on the warm sample, the rate with the data in memory, not this host's rate with no limit (which stays fetch-bound)")
	}
	if ch.Frac < 1 && s.deps.Progress != nil {
		s.deps.Progress.Note(fmt.Sprintf("memory points on a %.3g sample of the dataset: %s", ch.Frac, ch.Reason))
	}
	return nil
}
