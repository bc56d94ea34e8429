package profiler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner/owner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ErrInterrupted is returned by Run when its context was cancelled; the
// profile saved so far is valid and a Run with Resume continues it.
var ErrInterrupted = errors.New("profiling interrupted; the partial profile is saved")

// ErrProfileExists is returned by Run when Config.Out exists and
// Config.Resume is not set: a profile is never overwritten.
var ErrProfileExists = errors.New("a profile exists there; resume it or remove it first")

// sweep is the state of one Run.
type sweep struct {
	cfg     Config
	prof    *sensitivity.Profile
	workDir string
	// logs and timeline are LogDir and TimelineDir, opened without
	// following a symlink; every file in them is made afresh through them
	// (internal/safefile). nil when not kept.
	logs, timeline *safefile.Dir
	datasetBytes   int64
	datasetFiles   int
	sawEmulated    bool
	// emulatedGPUs are the GPU types the emulated steps stood for
	// (the stream's emulated_gpu), in the order first seen.
	emulatedGPUs []string
	// refusedGPUType is an emulated_gpu the profile's reader refused as
	// gpu.type (save): not recorded again.
	refusedGPUType string
	warnings       []string
	jobState

	started  time.Time // when this Run began
	baseWall float64   // wall seconds of the runs this one resumes
	index    int       // points started, a resumed profile's included
	live     *launch   // the running launch, if any (launch.go)
	// relaunchWhy is why the next launch is needed: recorded with it.
	relaunchWhy string
	scaled      *scaledData // the dataset's sample for scaled memory points (cost_memscale.go)
	// budgetShort: the strategy stopped because no uncertain cell fits in
	// the time budget left (cost_budget.go).
	budgetShort bool
	// warmSample: the unlimited column reads the sample too, warm (the
	// dataset does not fit in half the host's memory; cost_memscale_auto.go).
	warmSample bool
}

func (s *sweep) warnf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	for _, w := range s.warnings {
		if w == msg {
			return
		}
	}
	s.warnings = append(s.warnings, msg)
	if s.cfg.Progress != nil {
		s.cfg.Progress.Note("warning: " + msg)
	}
}

// Run profiles the job: the CPU axis with memory unlimited and the dataset
// warm, then the memory axis at the best CPU count from a cold cache. It
// saves the profile atomically after every point, records failed points
// with their class and goes on, and fills the cells it did not measure with
// predictions (marked measured: false). On cancellation it returns
// ErrInterrupted with the profile saved as of the last finished point.
func Run(ctx context.Context, cfg Config) (*sensitivity.Profile, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &sweep{cfg: cfg}
	if err := s.open(); err != nil {
		return nil, err
	}
	work, err := s.makeDirs()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	defer s.closeDirs()
	if err := s.setupJob(); err != nil {
		return nil, err
	}
	if err := s.chooseMemScale(); err != nil {
		return nil, err
	}
	plan, err := plannerFor(cfg.Strategy)
	if err != nil {
		return nil, err
	}
	s.started, s.baseWall = cfg.Now(), s.prof.Cost.WallSeconds
	s.index = len(s.measuredCells()) // a resumed sweep goes on counting
	if s.index > 0 && cfg.Progress != nil {
		cfg.Progress.Note(fmt.Sprintf("resuming %s: %d measured point(s) kept", cfg.Out, s.index))
	}
	defer s.endLaunch("")
	err = s.runPlan(ctx, plan)
	if err == nil {
		err = s.stepOnlyIfDue(ctx)
	}
	if err == nil {
		err = s.runValidation(ctx)
	}
	s.endLaunch("")
	if err != nil && !errors.Is(err, errTimeBudget) {
		return s.prof, err
	}
	s.setStop(err)
	if err := s.save(); err != nil {
		return s.prof, err
	}
	return s.prof, nil
}

// makeDirs makes the sweep's work directory (returned, for the caller to
// remove) and the log and timeline directories.
func (s *sweep) makeDirs() (string, error) {
	// Named after this process (a later run removes it if this one dies)
	// and 0700: only this run enters it; a container's user gets its own
	// point directory, mounted (runner/docker).
	work, err := owner.MkdirTemp("", owner.TempDirPrefix)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	s.workDir = work
	for _, d := range []struct {
		path string
		dir  **safefile.Dir
	}{{s.cfg.LogDir, &s.logs}, {s.cfg.TimelineDir, &s.timeline}} {
		if d.path == "" {
			continue
		}
		if *d.dir, err = safefile.MakeDir(d.path, 0o755); err != nil {
			s.closeDirs()
			os.RemoveAll(work)
			return "", fmt.Errorf("output dir: %w", err)
		}
	}
	return work, nil
}

// closeDirs closes the log and timeline directories.
func (s *sweep) closeDirs() {
	for _, d := range []*safefile.Dir{s.logs, s.timeline} {
		if d != nil {
			d.Close()
		}
	}
}

// save brings the profile up to date and writes it atomically. What the
// job reported is written only as its reader accepts it: the profile is
// validated as every reader validates it (sensitivity.Profile.Validate),
// and a measured point whose figures the reader refuses (a job that
// reported 2e9 samples an iteration) becomes a failed point carrying the
// reader's message, its figures dropped, before anything is written.
func (s *sweep) save() error {
	s.prof.Cost.WallSeconds = s.baseWall + s.cfg.Now().Sub(s.started).Seconds()
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
func (s *sweep) failRefused(err error) bool {
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

// runPlan measures the points the strategy proposes until it has none.
func (s *sweep) runPlan(ctx context.Context, plan planner) error {
	for {
		pt, ok := plan(s)
		if !ok {
			return nil
		}
		if s.measured(pt.cpus, pt.memLimit) {
			return fmt.Errorf("strategy %s proposed %s, which is measured already (a bug)", s.cfg.Strategy, pt.label())
		}
		if pt.cold && s.fitMemAxis() {
			continue // the axis changed: plan again
		}
		if err := s.runOne(ctx, pt, s.totalHint()); err != nil {
			return err
		}
		if err := s.stepOnlyIfDue(ctx); err != nil {
			return err
		}
	}
}

// runValidation measures the validation cells still missing.
func (s *sweep) runValidation(ctx context.Context) error {
	n := s.cfg.ValidateCells
	if n <= 0 {
		return nil
	}
	for _, c := range s.prof.Cells {
		if c.Measured && c.Phase == sensitivity.PhaseValidate {
			n--
		}
	}
	for _, pt := range s.validationPoints(n) {
		if err := s.runOne(ctx, pt, "validation"); err != nil {
			return err
		}
	}
	return nil
}

// runOne measures one point, records its cell and saves the profile; an
// interrupted point saves what came before it and returns ErrInterrupted.
func (s *sweep) runOne(ctx context.Context, pt point, total string) error {
	cfg := &s.cfg
	if err := s.checkBudget(); err != nil {
		return err
	}
	s.index++
	if cfg.Progress != nil {
		cfg.Progress.PointStart(s.index, total, pt.label())
	}
	t0 := cfg.Now()
	cell, err := s.measurePoint(ctx, pt)
	if errors.Is(err, errInterrupted) {
		s.setStop(err)
		if serr := s.save(); serr != nil {
			return serr
		}
		return ErrInterrupted
	}
	if err != nil {
		return fmt.Errorf("profile point %s: %w", pt.label(), err)
	}
	s.prof.SetCell(cell)
	s.prof.Cost.Points++
	s.addCost(cell)
	s.noteInterference(cell)
	if cfg.Progress != nil {
		cfg.Progress.PointDone(pt.label(), cell, cfg.Now().Sub(t0))
	}
	s.noteTimeLeft(s.index, total)
	return s.save()
}

// open starts a new profile or loads the one to resume.
func (s *sweep) open() error {
	cfg := &s.cfg
	ident, err := s.scanDataset()
	if err != nil {
		return err
	}
	if _, err = os.Stat(cfg.Out); err == nil {
		if !cfg.Resume {
			return fmt.Errorf("%s: %w", cfg.Out, ErrProfileExists)
		}
		p, err := sensitivity.Load(cfg.Out)
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		s.warnings = p.Warnings
		if err := s.checkResume(p, ident); err != nil {
			return err
		}
		p.Identity = ident
		// Predicted cells are recomputed at the end.
		kept := p.Cells[:0]
		for _, c := range p.Cells {
			if c.Measured {
				kept = append(kept, c)
			}
		}
		p.Cells = kept
		s.prof = p
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("out: %w", err)
	} else {
		s.prof = &sensitivity.Profile{
			SchemaVersion: sensitivity.SchemaVersion,
			ToolVersion:   cfg.ToolVersion,
			CreatedAt:     cfg.Now().UTC().Truncate(1e9),
			Job: sensitivity.JobInfo{
				Name: cfg.JobName, Command: cfg.Command, Runner: cfg.Runner.Name(), Image: cfg.Image,
				Batch: cfg.Batch, GPUs: cfg.GPUs, MaxIterations: cfg.MaxIterations, DataDir: cfg.DataDir,
			},
			Strategy: cfg.Strategy,
			Identity: ident,
		}
	}
	p := s.prof
	p.Host = cfg.Host
	p.Host.DatasetBytes = s.datasetBytes
	p.Host.DatasetFiles = s.datasetFiles
	p.Host.ReadLimitBytesPS = cfg.ReadBPS
	p.GPU = cfg.GPU
	if p.GPU.Mode == "" {
		p.GPU.Mode = sensitivity.GPUModeNone
	}
	p.Axes.CPUs = sortedUniqueFloats(append(p.Axes.CPUs, cfg.CPUs...))
	var mems []int64
	for _, m := range p.Axes.MemLimitBytes {
		if !sensitivity.Unlimited(m) {
			mems = append(mems, m)
		}
	}
	cfg.MemLimits = sortedUniqueInts(cfg.MemLimits)
	switch {
	case cfg.MemAxisFromJob && p.Axes.MemFrom != "":
		// A resumed profile keeps the axis it fitted to the job.
	case cfg.MemAxisFromJob:
		p.Axes.MemLimitBytes = append(sortedUniqueInts(append(mems, cfg.MemLimits...)), 0)
	default:
		p.Axes.MemLimitBytes = append(sortedUniqueInts(append(mems, cfg.MemLimits...)), 0)
		p.Axes.MemFrom = "given"
	}
	if cfg.Cache == nil {
		s.warnf("the page cache is not controlled on this runner: memory points may be optimistic")
	}
	return nil
}

// scanDataset measures and fingerprints the dataset and returns the
// identity of this run (identity.go).
func (s *sweep) scanDataset() (*sensitivity.Identity, error) {
	var data *sensitivity.DatasetIdentity
	if s.cfg.DataDir != "" {
		var err error
		if data, err = FingerprintDataset(s.cfg.DataDir); err != nil {
			return nil, err
		}
		s.datasetBytes, s.datasetFiles = data.Bytes, data.Files
	}
	return s.identity(data)
}

// DatasetSize returns the bytes and number of regular files under dir.
// Errors name the data setting (Config.DataDir).
func DatasetSize(dir string) (bytes int64, files int, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("data: %w", err)
	}
	if !st.IsDir() {
		return 0, 0, fmt.Errorf("data: %s is not a directory", dir)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("data: %w", err)
			}
			bytes += info.Size()
			files++
		}
		return nil
	})
	return bytes, files, err
}

// stepOnlyIfDue measures the job's step alone at the most CPUs, once, when
// the stall breakdown is asked for (DS-Analyzer's first differential run,
// the rate its step alone ingests): in the live launch, which replays one
// batch on its control channel, or, for a job that cannot, in a launch of
// its own (the contract's --synthetic-data, or the probe's replay mode
// for a template).
func (s *sweep) stepOnlyIfDue(ctx context.Context) error {
	if !s.cfg.StallBreakdown || s.prof.StepOnly != nil || !s.stepOnlyPossible() {
		return nil
	}
	cpus := s.prof.Axes.CPUs
	pt := point{cpus: cpus[len(cpus)-1], phase: "step_only", synthetic: true}
	if s.cfg.Progress != nil {
		s.cfg.Progress.PointStart(0, "step-only", pt.label())
	}
	t0 := s.cfg.Now()
	cell, err := s.measurePointAt(ctx, pt)
	if errors.Is(err, errInterrupted) {
		return ErrInterrupted
	}
	if err != nil {
		return fmt.Errorf("step-only run: %w", err)
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress.PointDone(pt.label(), cell, s.cfg.Now().Sub(t0))
	}
	source := s.stepOnlySource()
	if cell.Stats != nil && cell.Stats.InPlace {
		source = sensitivity.StepOnlyReplay
	}
	s.prof.StepOnly = &sensitivity.StepOnly{Source: source, CPUs: pt.cpus, SamplesPerS: cell.SamplesPerS,
		SamplesPerSCI95: cell.SamplesPerSCI95, Stats: cell.Stats, Failure: cell.Failure}
	switch {
	case cell.Failure != nil && source == sensitivity.StepOnlyReplay:
		s.warnf("the step-only run (the job replaying one batch in place) failed (%s): no stall breakdown", cell.Failure.Class)
	case cell.Failure != nil && s.tmpl.has():
		s.warnf("the step-only run (the probe replaying the first batch) failed (%s): no stall breakdown", cell.Failure.Class)
	case cell.Failure != nil:
		s.warnf("the step-only run (--%s) failed (%s): no stall breakdown; does the job accept --%[1]s?", jobcontract.FlagSyntheticData, cell.Failure.Class)
	}
	s.prof.Cost.Points++
	s.addCost(cell)
	return s.save()
}

// measuredCells returns the cells measured so far.
func (s *sweep) measuredCells() []sensitivity.Cell {
	var out []sensitivity.Cell
	for _, c := range s.prof.Cells {
		if c.Measured {
			out = append(out, c)
		}
	}
	return out
}

// totalHint says how many points the strategy will measure in all, for
// progress: exact for the fixed strategies, a bound for optimistic.
func (s *sweep) totalHint() string {
	nc, nm := len(s.prof.Axes.CPUs), len(s.limitedMems())
	switch s.cfg.Strategy {
	case StrategyGrid:
		return fmt.Sprint(nc * (nm + 1))
	case StrategyAxes:
		return fmt.Sprint(nc + nm)
	case StrategyOptimistic:
		return fmt.Sprintf("≤%d", min(s.cfg.Budget, nc*(nm+1)))
	}
	return fmt.Sprintf("≤%d", nc)
}

// noteEmulatedGPU records the GPU types a point's emulated steps stood for;
// a sweep whose points emulated two types records none and warns.
func (s *sweep) noteEmulatedGPU(its []jobcontract.Iteration) {
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

// finish brings derived parts of the profile up to date: GPU mode from the
// stream, predicted cells, warnings.
func (s *sweep) finish() {
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
