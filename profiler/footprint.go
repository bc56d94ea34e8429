package profiler

import (
	"fmt"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// footprint is the job's own memory apart from its dataset's page cache:
// at a warm, unlimited-memory point the profiler has read the dataset
// beforehand, so its pages are charged to the profiler, not the job, and
// the job's cgroup holds its anonymous memory and the page cache it first
// touched (interpreter, framework libraries). The largest anonymous
// memory over those points plus the framework's page cache
// (frameworkCache); 0 when none was measured.
func footprint(cells []sensitivity.Cell) int64 {
	var anon int64
	for _, c := range ownMemoryCells(cells) {
		anon = max(anon, c.Stats.MemAnonBytes)
	}
	if anon == 0 {
		return 0
	}
	return anon + frameworkCache(cells)
}

// ownMemoryCells are the cells whose cgroup figures show the job's own
// memory: measured warm at unlimited memory.
func ownMemoryCells(cells []sensitivity.Cell) []sensitivity.Cell {
	var out []sensitivity.Cell
	for _, c := range cells {
		if c.Measured && c.Failure == nil && sensitivity.Unlimited(c.MemLimitBytes) && c.Stats != nil && !c.Stats.ColdStart {
			out = append(out, c)
		}
	}
	return out
}

// frameworkCache is the page cache the job's own files take (interpreter,
// framework libraries): the least the warm unlimited points' cgroups
// held. A point changed in place in a launch that already read its
// dataset into its own cgroup (a cold point before it, or pages the
// profiler's had to give back) holds some of the dataset's pages too; the
// launch's first point, started on a warm dataset, holds the job's own
// only, and so does every point of a launch per point.
func frameworkCache(cells []sensitivity.Cell) int64 {
	least := int64(-1)
	for _, c := range ownMemoryCells(cells) {
		if least < 0 || c.Stats.MemCacheBytes < least {
			least = c.Stats.MemCacheBytes
		}
	}
	return max(least, 0)
}

// noteFootprint records the footprint in the profile and warns about the
// memory limits at or below it. The profile is saved (and this runs) after
// every point, and every strategy measures unlimited points first, so the
// warning comes before the first limited point is measured. Once, when
// the footprint is first known, it says where the memory axis starts
// relative to it.
func (s *recorder) noteFootprint() {
	p := s.prof
	fp := footprint(p.Cells)
	if fp <= 0 || s.deps.Cache == nil {
		return
	}
	first := p.Job.FootprintBytes == 0
	p.Job.FootprintBytes = fp
	low := int64(0)
	for _, m := range p.Axes.MemLimitBytes {
		if sensitivity.Unlimited(m) {
			continue
		}
		if low == 0 || m < low {
			low = m
		}
		if m <= fp {
			s.warnf("memory limit %s is at or below the job's own footprint (%s of anonymous memory and framework page cache, measured at the unlimited points): that column squeezes the framework, not the dataset's cache; give limits above it",
				units.FormatMemLimit(m), units.FormatBytes(fp))
		}
	}
	if first && low > fp && s.deps.Progress != nil {
		s.deps.Progress.Note(fmt.Sprintf("memory axis starts at %s, %s above the job's own footprint of %s (anonymous memory and framework page cache): each limited column is page cache for the dataset",
			units.FormatMemLimit(low), units.FormatBytes(low-fp), units.FormatBytes(fp)))
	}
}

// PythonWorkingSetBytes is the room the default memory axis leaves above
// the dataset for a Python job: the interpreter, the framework and its
// loader workers (torch 1.13 with two workers: 173-214 MiB of anonymous
// memory measured under synergy profile, docs/pytorch.md), with room for
// the model. With 64 MiB, a small dataset's axis OOM-kills torch before
// its first iteration.
const PythonWorkingSetBytes = 512 << 20

// DefaultMemLimitsFor is DefaultMemLimits for a command: a Python
// interpreter's axis leaves PythonWorkingSetBytes for the job.
func DefaultMemLimitsFor(dataDir string, command []string) ([]int64, error) {
	if len(command) == 0 || !IsPython(command[0]) {
		return DefaultMemLimits(dataDir)
	}
	datasetBytes, _, err := DatasetSize(dataDir)
	if err != nil {
		return nil, err
	}
	return DefaultMemAxis(datasetBytes, PythonWorkingSetBytes), nil
}
