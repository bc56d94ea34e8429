package profiler

import (
	"fmt"
	"sort"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// footprintHeadroom is the room a fitted memory axis leaves above the
// job's measured footprint: a cold pass allocates beyond what a warm one
// holds (the prefetch of every loader worker, the kernel's read-ahead). On
// the GPU server the ImageNet script measured 3.54 GiB with 16 workers at
// the unlimited points and was OOM-killed at 4 GiB, not at 4.5.
const footprintHeadroom = 1.25

// footprintAt predicts the job's own memory (anonymous memory and the page
// cache of its own files, frameworkCache, at the warm unlimited points,
// where the dataset's pages are the profiler's) with w loader workers: the figure measured at
// w workers, else the line through the points measured on either side (or
// the two nearest), never below the largest figure at fewer workers. ok is
// false when no unlimited point has been measured, or w lies beyond the
// only one measured.
func footprintAt(cells []sensitivity.Cell, gpus, w int) (int64, bool) {
	byW := map[int]int64{}
	cache := frameworkCache(cells) // the job's own files' pages, not the dataset's (footprint.go)
	for _, c := range ownMemoryCells(cells) {
		cw := cellWorkers(c, gpus)
		byW[cw] = max(byW[cw], c.Stats.MemAnonBytes+cache)
	}
	if fp, ok := byW[w]; ok && fp > 0 {
		return fp, true
	}
	ws := make([]int, 0, len(byW))
	for k := range byW {
		ws = append(ws, k)
	}
	sort.Ints(ws)
	if len(ws) == 0 || (len(ws) == 1 && w > ws[0]) {
		return 0, false
	}
	var floor int64
	for _, k := range ws {
		if k < w {
			floor = max(floor, byW[k])
		}
	}
	if len(ws) == 1 {
		return max(floor, byW[ws[0]]), true
	}
	// The two measured worker counts around w, or the two nearest below or
	// above it.
	i := sort.SearchInts(ws, w)
	lo, hi := i-1, i
	switch {
	case i == 0:
		lo, hi = 0, 1
	case i == len(ws):
		lo, hi = len(ws)-2, len(ws)-1
	}
	w0, w1 := ws[lo], ws[hi]
	f0, f1 := float64(byW[w0]), float64(byW[w1])
	fp := int64(f0 + (f1-f0)*float64(w-w0)/float64(w1-w0))
	return max(fp, floor), fp > 0 || floor > 0
}

// cellWorkers is the loader workers a cell ran with: what the job said it
// ran (stats.workers_used: 0 for an in-process loader), else the count it
// was given, else the profiler's rule.
func cellWorkers(c sensitivity.Cell, gpus int) int {
	switch {
	case c.Stats != nil && c.Stats.WorkersUsed != nil:
		return *c.Stats.WorkersUsed
	case c.Stats != nil && c.Stats.Workers > 0:
		return c.Stats.Workers
	}
	return Workers(c.CPUs, gpus)
}

// jobWorkers is the loader workers the job runs at cpus: the profiler's
// rule, unless a measured cell showed the job keeps a count of its own
// (stats.workers_used other than what it was given: an in-process loader
// stays so at every launch).
func jobWorkers(cells []sensitivity.Cell, cpus float64, gpus int) int {
	for _, c := range cells {
		if st := c.Stats; c.Measured && st != nil && st.WorkersUsed != nil && st.Workers > 0 && *st.WorkersUsed != st.Workers {
			return *st.WorkersUsed
		}
	}
	return Workers(cpus, gpus)
}

// workersText names a loader's workers in a message.
func workersText(w int) string {
	if w == 0 {
		return "its loader in-process (0 workers)"
	}
	return fmt.Sprintf("%d loader workers", w)
}

// fitMemAxis sets a memory axis that was not given (Config.MemAxisFromJob)
// from the job once its footprint is known, before the first limited point:
// the footprint at the most loader workers any CPU count of the grid runs
// with, with footprintHeadroom, plus 1/4, 1/2 and 5/4 of the dataset, as
// DefaultMemAxis spaces them. The axis given at the start was drawn from
// the dataset alone and is only a placeholder: a CUDA job's own memory
// (context, model, one process per loader worker) dwarfs a guess, and on
// the GPU server every limit of such an axis was OOM-killed. It reports
// whether the axis changed (the planner then plans again). The profile
// says how its axis was chosen (Axes.MemFrom).
func fitMemAxis(s *recorder) bool {
	p := s.prof
	if !s.cfg.MemAxisFromJob || p.Axes.MemFrom != "" {
		return false
	}
	for _, c := range p.Cells {
		if c.Measured && !sensitivity.Unlimited(c.MemLimitBytes) {
			p.Axes.MemFrom = "the dataset's size (a limited point was measured before the job's footprint was known)"
			return false
		}
	}
	maxW := 0
	for _, c := range p.Axes.CPUs {
		maxW = max(maxW, jobWorkers(p.Cells, c, s.cfg.GPUs))
	}
	fp, ok := footprintAt(p.Cells, s.cfg.GPUs, maxW)
	if !ok || fp <= 0 {
		return false
	}
	room := int64(footprintHeadroom * float64(fp))
	var axis []int64
	for _, m := range DefaultMemAxis(s.data.datasetBytes, room) {
		if s.deps.Host.DRAMBytes <= 0 || m < s.deps.Host.DRAMBytes {
			axis = append(axis, m)
		}
	}
	if len(axis) == 0 {
		p.Axes.MemFrom = fmt.Sprintf("the dataset's size: the job's footprint with %s, %s, leaves no limit below this host's memory",
			workersText(maxW), units.FormatBytes(fp))
		return false
	}
	p.Axes.MemLimitBytes = append(axis, 0)
	p.Axes.MemFrom = fmt.Sprintf("the job: its footprint with %s is %s (anonymous memory and framework page cache at the unlimited points%s); "+
		"the limits are %.0f%% of it plus 1/4, 1/2 and 5/4 of the %s dataset",
		workersText(maxW), units.FormatBytes(fp), wholePassText(p.Cells), 100*footprintHeadroom, units.FormatBytes(s.data.datasetBytes))
	if s.deps.Progress != nil {
		var names []string
		for _, m := range axis {
			names = append(names, units.FormatMemLimit(m))
		}
		s.deps.Progress.Note(fmt.Sprintf("memory axis %v, from %s", names, p.Axes.MemFrom))
	}
	return true
}

// predictedOOM is the cell of a cold point whose limit is at or below the
// job's own memory at its loader workers (footprintAt): not launched, an
// OOM kill predicted, with its reason.
func predictedOOM(s *recorder, pt point) (sensitivity.Cell, bool) {
	if !pt.cold || pt.synthetic || s.data.scaledPoint(pt) {
		return sensitivity.Cell{}, false
	}
	w := jobWorkers(s.prof.Cells, pt.cpus, s.cfg.GPUs)
	fp, ok := footprintAt(s.prof.Cells, s.cfg.GPUs, w)
	if !ok || pt.memLimit > fp {
		return sensitivity.Cell{}, false
	}
	msg := fmt.Sprintf("not launched: an OOM kill is predicted: the job's own memory with %s is %s (anonymous memory and framework page cache at the unlimited points%s), at or above this limit of %s",
		workersText(w), units.FormatBytes(fp), wholePassText(s.prof.Cells), units.FormatMemLimit(pt.memLimit))
	s.warnf("%s: %s", pt.label(), msg)
	return sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase,
		Failure: &sensitivity.Failure{Class: sensitivity.FailOOMKilled, ExitCode: -1, Message: msg}}, true
}

// wholePassText says whether the footprint includes a whole pass over the
// data and what follows it (a script's evaluation, its checkpoint): a
// measured unlimited point whose iterations crossed a pass's end (its
// memory was sampled through it); else it says it could not, so a limit
// fitted to it may still OOM-kill the job at its first pass's end.
func wholePassText(cells []sensitivity.Cell) string {
	for _, c := range ownMemoryCells(cells) {
		if c.Stats.PassBoundaries > 0 {
			return ", over a whole pass and what follows it"
		}
	}
	return "; it could not include a whole pass and what follows it (an evaluation, a checkpoint): no unlimited point reached its pass's end, so a limit near it may be OOM-killed there"
}
