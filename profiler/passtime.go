package profiler

import (
	"fmt"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

// tooSlowForTimeout is the cell of a cold point that cannot measure
// anything within its time cap, decided before it is launched. A cold
// point measures whole passes from its second, so it needs at least two
// passes over its data; the job's fastest rate with memory unlimited (the
// data warm) at as many CPUs or more is as fast as a cold point can go.
// When even that takes longer than --point-timeout the point is not
// launched: its cell is a timeout failure that says how long the passes
// take and which flag to change. On a real CPU step of about 3 s (92
// iterations a pass) the memory points otherwise ran their 2 minutes into
// "only 39 iterations reported within 2m0s (0 measurable)".
func (s *meter) tooSlowForTimeout(pt point) (sensitivity.Cell, bool) {
	if !pt.cold || pt.synthetic || s.cfg.PointTimeout <= 0 {
		return sensitivity.Cell{}, false
	}
	files := s.data.datasetFiles
	if s.data.scaledPoint(pt) && s.data.scaled != nil {
		files = s.data.scaled.files
	}
	var warm *sensitivity.Cell
	for i := range s.rec.prof.Cells {
		c := &s.rec.prof.Cells[i]
		if c.Measured && c.Failure == nil && sensitivity.Unlimited(c.MemLimitBytes) && c.CPUs >= pt.cpus &&
			c.SamplesPerS > 0 && (warm == nil || c.SamplesPerS > warm.SamplesPerS) {
			warm = c
		}
	}
	if files <= 0 || warm == nil {
		return sensitivity.Cell{}, false
	}
	need := time.Duration(2 * float64(files) / warm.SamplesPerS * float64(time.Second))
	if need <= s.cfg.PointTimeout {
		return sensitivity.Cell{}, false
	}
	msg := fmt.Sprintf("not launched: a point under a memory limit is measured over whole passes from its second, "+
		"and two passes over its %d samples take at least %s at the %.1f samples/s measured at cpus=%g with memory unlimited, "+
		"more than the point's time cap of %s: raise --point-timeout above %s",
		files, need.Round(time.Second), warm.SamplesPerS, warm.CPUs, s.cfg.PointTimeout, need.Round(time.Second))
	if s.cfg.MemScale == 0 {
		msg += ", or measure the memory points on a sample of the data (--mem-scale)"
	}
	s.rec.warnf("%s: %s", pt.label(), msg)
	return sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase,
		Failure: &sensitivity.Failure{Class: sensitivity.FailTimeout, Message: msg}}, true
}
