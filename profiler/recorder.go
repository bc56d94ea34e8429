package profiler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/sensitivity"
)

// recorder owns the profile of a Run: its cells and cost as measured so
// far, the warnings, the file it is saved to after every point (save) and
// the time budget. The planner reads it; nothing else writes the profile.
type recorder struct {
	cfg  *Config
	deps *Deps
	data *dataset
	prof *sensitivity.Profile
	// warnings are the profile's, each once.
	warnings    []string
	sawEmulated bool
	// emulatedGPUs are the GPU types the emulated steps stood for
	// (the stream's emulated_gpu), in the order first seen.
	emulatedGPUs []string
	// refusedGPUType is an emulated_gpu the profile's reader refused as
	// gpu.type (save): not recorded again.
	refusedGPUType string
	// emulatedLabel is the loader-only step the probe reported.
	emulatedLabel string
	started       time.Time // when this Run began
	baseWall      float64   // wall seconds of the runs this one resumes
	// budgetShort: the strategy stopped because no uncertain cell fits in
	// the time budget left (cost_budget.go).
	budgetShort bool
}

func (s *recorder) warnf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	for _, w := range s.warnings {
		if w == msg {
			return
		}
	}
	s.warnings = append(s.warnings, msg)
	if s.deps.Progress != nil {
		s.deps.Progress.Note("warning: " + msg)
	}
}

// save brings the profile up to date and writes it atomically. What the
// job reported is written only as its reader accepts it: the profile is
// validated as every reader validates it (sensitivity.Profile.Validate),
// and a measured point whose figures the reader refuses (a job that
// reported 2e9 samples an iteration) becomes a failed point carrying the
// reader's message, its figures dropped, before anything is written.
func (s *recorder) save() error {
	s.prof.Cost.WallSeconds = s.baseWall + s.deps.Now().Sub(s.started).Seconds()
	for range len(s.prof.Cells) + 2 {
		s.finish()
		err := s.prof.Validate()
		if err == nil {
			break
		}
		if !s.failRefused(err) {
			break // not a point's figures: the settings, checked by the CLI before the first point
		}
	}
	if err := s.prof.Save(s.cfg.Out); err != nil {
		return fmt.Errorf("save profile %s: %w", s.cfg.Out, err)
	}
	return nil
}

// failRefused turns the measured point that err (a refusal of
// Validate) names into a failed point with err's message, and reports
// whether it did: false when err names no measured point that has not
// failed yet.
func (s *recorder) failRefused(err error) bool {
	var fe *sensitivity.FieldError
	if !errors.As(err, &fe) {
		return false
	}
	fail := func(rate, ci *float64, st **sensitivity.PointStats, fl **sensitivity.Failure, field string) bool {
		if *fl != nil {
			return false
		}
		*fl = &sensitivity.Failure{Class: sensitivity.FailMalformedMetrics,
			Message: "the job's figures are beyond what a profile may hold: " + fe.Error()}
		*rate, *ci = 0, 0
		if strings.Contains(field, ".stats.") {
			*st = nil
		}
		s.warnf("a point recorded as failed: its figures are beyond what a profile may hold: %s", fe.Error())
		// The fit and the predictions drew on the refused figures: finish
		// makes them again from what is left.
		s.prof.Fit = nil
		s.prof.Cells = slices.DeleteFunc(s.prof.Cells, func(c sensitivity.Cell) bool { return !c.Measured })
		return true
	}
	if fe.Field == "gpu.type" && s.prof.GPU.Type != "" {
		// The job's emulated_gpu, which the reader refuses as a type name.
		s.warnf("gpu.type left empty: %s", fe.Error())
		s.refusedGPUType, s.prof.GPU.Type = s.prof.GPU.Type, ""
		return true
	}
	var i int
	if _, scanErr := fmt.Sscanf(fe.Field, "cells[%d]", &i); scanErr == nil && i >= 0 && i < len(s.prof.Cells) {
		c := &s.prof.Cells[i]
		if !c.Measured {
			return false
		}
		c.Stall = nil
		return fail(&c.SamplesPerS, &c.SamplesPerSCI95, &c.Stats, &c.Failure, fe.Field)
	}
	if so := s.prof.StepOnly; so != nil && strings.HasPrefix(fe.Field, "step_only.") {
		return fail(&so.SamplesPerS, &so.SamplesPerSCI95, &so.Stats, &so.Failure, fe.Field)
	}
	return false
}

// finish brings derived parts of the profile up to date: GPU mode from the
// stream, predicted cells, warnings.
func (s *recorder) finish() {
	p := s.prof
	if s.sawEmulated && p.GPU.Mode == sensitivity.GPUModeNone {
		p.GPU.Mode = sensitivity.GPUModeEmulated
		p.GPU.Note = "the job reported an emulated GPU step (a timed wait): throughput is not from a GPU"
		if s.emulatedLabel != "" {
			p.GPU.Note += "; the probe's loader-only mode: " + s.emulatedLabel
		}
	}
	if p.GPU.Mode == sensitivity.GPUModeEmulated && p.GPU.Type == "" && len(s.emulatedGPUs) == 1 && s.emulatedGPUs[0] != s.refusedGPUType {
		p.GPU.Type = s.emulatedGPUs[0]
	}
	s.noteFootprint()
	p.Warnings = s.warnings
	if w := speedNote(p); w != "" {
		p.Warnings = append(slices.Clone(s.warnings), w)
	}
	if err := sensitivity.Fill(p); err != nil {
		p.Warnings = append(slices.Clone(p.Warnings), "cells not predicted: "+err.Error())
	}
	fillStalls(p)
}

// measuredCells returns the cells measured so far.
func (s *recorder) measuredCells() []sensitivity.Cell {
	var out []sensitivity.Cell
	for _, c := range s.prof.Cells {
		if c.Measured {
			out = append(out, c)
		}
	}
	return out
}

// noteEmulatedGPU records the GPU types a point's emulated steps stood for;
// a sweep whose points emulated two types records none and warns.
func (s *recorder) noteEmulatedGPU(its []jobcontract.Iteration) {
	for _, it := range its {
		if it.EmulatedGPU == "" || len(s.emulatedGPUs) >= 2 || slices.Contains(s.emulatedGPUs, it.EmulatedGPU) {
			continue // two are enough to leave gpu.type empty: a job naming a new type each line costs nothing more
		}
		s.emulatedGPUs = append(s.emulatedGPUs, it.EmulatedGPU)
		if len(s.emulatedGPUs) == 2 {
			s.warnf("the job's emulated steps stood for two GPU types (%q and %q): gpu.type is left empty", s.emulatedGPUs[0], s.emulatedGPUs[1])
		}
	}
}

func (s *recorder) measured(cpus float64, mem int64) bool {
	c := s.prof.Cell(cpus, mem)
	return c != nil && c.Measured
}

// value returns the measured throughput of a cell (0 for failures) and
// whether it was measured.
func (s *recorder) value(cpus float64, mem int64) (float64, bool) {
	c := s.prof.Cell(cpus, mem)
	if c == nil || !c.Measured {
		return 0, false
	}
	if c.Failure != nil {
		return 0, true
	}
	return c.SamplesPerS, true
}

// limitedMems is the memory axis without the unlimited column.
func (s *recorder) limitedMems() []int64 {
	var out []int64
	for _, m := range s.prof.Axes.MemLimitBytes {
		if !sensitivity.Unlimited(m) {
			out = append(out, m)
		}
	}
	return out
}

// fitPoints counts measured cells that feed the fit (not validation ones).
func (s *recorder) fitPoints() int {
	n := 0
	for _, c := range s.prof.Cells {
		if c.Measured && c.Phase != sensitivity.PhaseValidate {
			n++
		}
	}
	return n
}

// addHealth merges one point's sampler health into the profile's.
func (s *recorder) addHealth(h sample.Health) {
	for i := range s.prof.Samplers {
		r := &s.prof.Samplers[i]
		if r.Name != h.Name {
			continue
		}
		r.Samples += h.Samples
		for _, e := range h.Errors {
			if len(r.Errors) < sample.MaxDistinctErrors && !slices.Contains(r.Errors, e) {
				r.Errors = append(r.Errors, e)
			}
		}
		return
	}
	s.prof.Samplers = append(s.prof.Samplers, sensitivity.SamplerRun{Name: h.Name, Samples: h.Samples, Errors: append([]string(nil), h.Errors...)})
}
