package profiler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ErrInterrupted is returned by Run when its context was cancelled; the
// profile saved so far is valid and a Run with Resume continues it.
var ErrInterrupted = errors.New("profiling interrupted; the partial profile is saved")

// ErrProfileExists is returned by Run when Config.Out exists and
// Config.Resume is not set: a profile is never overwritten.
var ErrProfileExists = errors.New("a profile exists there; resume it or remove it first")

// sweep is one Run: it asks the planner for the next point (plan.go),
// measures it through the launcher (launch.go, move.go, measure.go) and
// records it (recorder.go). Each part owns its state:
//   - recorder: the profile, its file (atomic saves, resume), warnings,
//     cost and time budget;
//   - dataset: the data the job reads, its geometry and the sample of
//     scaled memory points (cost_memscale*.go);
//   - meter: how a point is measured from a stream (point.go): warm-up,
//     passes, the stop rule, the cell's figures;
//   - launcher: the running job, its channel, its cgroup, its files.
type sweep struct {
	cfg      Config
	deps     Deps
	rec      *recorder
	data     *dataset
	meter    *meter
	launcher *launcher
	index    int // points started, a resumed profile's included
}

// Run profiles the job: the CPU axis with memory unlimited and the dataset
// warm, then the memory axis at the best CPU count from a cold cache. It
// saves the profile atomically after every point, records failed points
// with their class and goes on, and fills the cells it did not measure with
// predictions (marked measured: false). On cancellation it returns
// ErrInterrupted with the profile saved as of the last finished point.
func Run(ctx context.Context, cfg Config, deps Deps) (*sensitivity.Profile, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Runner == nil {
		return nil, errors.New("runner: none configured")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := newSweep(cfg, deps)
	if err := s.open(); err != nil {
		return nil, err
	}
	l := s.launcher
	work, err := l.makeDirs()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	defer l.closeDirs()
	s.data.workDir = work
	if err := l.setupJob(); err != nil {
		return nil, err
	}
	if err := s.data.chooseMemScale(); err != nil {
		return nil, err
	}
	plan, err := plannerFor(cfg.Strategy)
	if err != nil {
		return nil, err
	}
	r := s.rec
	r.started, r.baseWall = deps.Now(), r.prof.Cost.WallSeconds
	s.index = len(r.measuredCells()) // a resumed sweep goes on counting
	if s.index > 0 && deps.Progress != nil {
		deps.Progress.Note(fmt.Sprintf("resuming %s: %d measured point(s) kept", cfg.Out, s.index))
	}
	defer l.endLaunch("")
	err = s.runPlan(ctx, plan)
	if err == nil {
		err = s.stepOnlyIfDue(ctx)
	}
	if err == nil {
		err = s.runValidation(ctx)
	}
	l.endLaunch("")
	if err != nil && !errors.Is(err, errTimeBudget) {
		return r.prof, err
	}
	r.setStop(err)
	if err := r.save(); err != nil {
		return r.prof, err
	}
	return r.prof, nil
}

// newSweep makes a sweep's parts, each pointing at the settings and
// dependencies the sweep holds.
func newSweep(cfg Config, deps Deps) *sweep {
	s := &sweep{cfg: cfg, deps: deps}
	c, d := &s.cfg, &s.deps
	s.rec = &recorder{cfg: c, deps: d}
	s.data = &dataset{cfg: c, deps: d, rec: s.rec}
	s.rec.data = s.data
	s.meter = &meter{cfg: c, rec: s.rec, data: s.data}
	s.launcher = &launcher{cfg: c, deps: d, rec: s.rec, data: s.data, meter: s.meter}
	return s
}

// runPlan measures the points the strategy proposes until it has none.
func (s *sweep) runPlan(ctx context.Context, plan planner) error {
	for {
		pt, ok := plan(s.rec)
		if !ok {
			return nil
		}
		if s.rec.measured(pt.cpus, pt.memLimit) {
			return fmt.Errorf("strategy %s proposed %s, which is measured already (a bug)", s.cfg.Strategy, pt.label())
		}
		if pt.cold && fitMemAxis(s.rec) {
			continue // the axis changed: plan again
		}
		if err := s.runOne(ctx, pt, totalHint(s.rec)); err != nil {
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
	for _, c := range s.rec.prof.Cells {
		if c.Measured && c.Phase == sensitivity.PhaseValidate {
			n--
		}
	}
	for _, pt := range validationPoints(s.rec, n) {
		if err := s.runOne(ctx, pt, "validation"); err != nil {
			return err
		}
	}
	return nil
}

// runOne measures one point, records its cell and saves the profile; an
// interrupted point saves what came before it and returns ErrInterrupted.
func (s *sweep) runOne(ctx context.Context, pt point, total string) error {
	if err := s.rec.checkBudget(); err != nil {
		return err
	}
	s.index++
	if s.deps.Progress != nil {
		s.deps.Progress.PointStart(s.index, total, pt.label())
	}
	t0 := s.deps.Now()
	cell, err := s.measurePoint(ctx, pt)
	if errors.Is(err, errInterrupted) {
		s.rec.setStop(err)
		if serr := s.rec.save(); serr != nil {
			return serr
		}
		return ErrInterrupted
	}
	if err != nil {
		return fmt.Errorf("profile point %s: %w", pt.label(), err)
	}
	s.rec.prof.SetCell(cell)
	s.rec.prof.Cost.Points++
	s.rec.addCost(cell)
	s.rec.noteInterference(cell)
	if s.deps.Progress != nil {
		s.deps.Progress.PointDone(pt.label(), cell, s.deps.Now().Sub(t0))
	}
	s.rec.noteTimeLeft(s.index, total)
	if err := s.rec.save(); err != nil {
		return err
	}
	if why := s.launcher.crashedAtStart; why != "" {
		return errors.New(why)
	}
	return nil
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
		s.rec.warnings = p.Warnings
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
		s.rec.prof = p
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("out: %w", err)
	} else {
		s.rec.prof = &sensitivity.Profile{
			SchemaVersion: sensitivity.SchemaVersion,
			ToolVersion:   s.deps.ToolVersion,
			CreatedAt:     s.deps.Now().UTC().Truncate(1e9),
			Job: sensitivity.JobInfo{
				Name: cfg.JobName, Command: cfg.Command, Runner: s.deps.Runner.Name(), Image: cfg.Image,
				Batch: cfg.Batch, GPUs: cfg.GPUs, MaxIterations: cfg.MaxIterations, DataDir: cfg.DataDir,
			},
			Strategy: cfg.Strategy,
			Identity: ident,
		}
	}
	p := s.rec.prof
	p.Host = s.deps.Host
	p.Host.DatasetBytes = s.data.datasetBytes
	p.Host.DatasetFiles = s.data.datasetFiles
	p.Host.ReadLimitBytesPS = cfg.ReadBPS
	p.GPU = s.deps.GPU
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
	if s.deps.Cache == nil {
		s.rec.warnf("the page cache is not controlled on this runner: memory points may be optimistic")
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
		s.data.datasetBytes, s.data.datasetFiles = data.Bytes, data.Files
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
	if !s.cfg.StallBreakdown || s.rec.prof.StepOnly != nil || !s.launcher.stepOnlyPossible() {
		return nil
	}
	if why := s.stepOnlyNothing(); why != "" {
		if !s.launcher.stepOnlySkipped {
			s.launcher.stepOnlySkipped = true
			s.rec.warnf("no step-only run: %s, so nothing can be replayed (stall breakdown off)", why)
		}
		return nil
	}
	cpus := s.rec.prof.Axes.CPUs
	pt := point{cpus: cpus[len(cpus)-1], phase: "step_only", synthetic: true}
	if s.deps.Progress != nil {
		s.deps.Progress.PointStart(0, "step-only", pt.label())
	}
	t0 := s.deps.Now()
	cell, err := s.launcher.measurePointAt(ctx, pt)
	if errors.Is(err, errInterrupted) {
		return ErrInterrupted
	}
	if err != nil {
		return fmt.Errorf("step-only run: %w", err)
	}
	if s.deps.Progress != nil {
		s.deps.Progress.PointDone(pt.label(), cell, s.deps.Now().Sub(t0))
	}
	source := s.launcher.stepOnlySource()
	if cell.Stats != nil && cell.Stats.InPlace {
		source = sensitivity.StepOnlyReplay
	}
	s.rec.prof.StepOnly = &sensitivity.StepOnly{Source: source, CPUs: pt.cpus, SamplesPerS: cell.SamplesPerS,
		SamplesPerSCI95: cell.SamplesPerSCI95, Stats: cell.Stats, Failure: cell.Failure}
	switch {
	case cell.Failure != nil && source == sensitivity.StepOnlyReplay:
		s.rec.warnf("the step-only run (the job replaying one batch in place) failed (%s): no stall breakdown", cell.Failure.Class)
	case cell.Failure != nil && s.launcher.tmpl.has():
		s.rec.warnf("the step-only run (the probe replaying the first batch) failed (%s): no stall breakdown", cell.Failure.Class)
	case cell.Failure != nil:
		s.rec.warnf("the step-only run (--%s) failed (%s): no stall breakdown; does the job accept --%[1]s?", jobcontract.FlagSyntheticData, cell.Failure.Class)
	}
	s.rec.prof.Cost.Points++
	s.rec.addCost(cell)
	return s.rec.save()
}

// stepOnlyNothing says why the job has no step to measure alone ("" when
// it has): it writes no stream, or the probe saw no DataLoader batch to
// replay.
func (s *sweep) stepOnlyNothing() string {
	switch {
	case s.meter.noStream != "":
		return "the job writes no metrics stream and its iterations are not known"
	case s.launcher.noLoader && s.launcher.tmpl.has():
		return "the probe saw no DataLoader batch in the job"
	}
	return ""
}

// measurePoint measures pt, or records why it is not launched: too slow
// for its time cap (passtime.go), or a memory limit the job is predicted
// to be OOM-killed under (memaxis.go).
func (s *sweep) measurePoint(ctx context.Context, pt point) (sensitivity.Cell, error) {
	if err := s.data.prepareScaled(pt); err != nil {
		return sensitivity.Cell{}, err
	}
	if cell, skip := s.meter.tooSlowForTimeout(pt); skip {
		return cell, nil
	}
	if cell, skip := predictedOOM(s.rec, pt); skip {
		return cell, nil
	}
	if why := s.meter.noStream; why != "" {
		// A job whose iterations are not known is not launched again: every
		// point would be refused alike (point.go, measureWall).
		return sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase,
			Stats:   &sensitivity.PointStats{Workers: Workers(pt.cpus, s.cfg.GPUs), ColdStart: pt.cold},
			Failure: &sensitivity.Failure{Class: sensitivity.FailNoProgress, Message: "not launched: " + why}}, nil
	}
	cell, err := s.launcher.measurePointAt(ctx, pt)
	s.data.markScaled(pt, &cell)
	return cell, err
}
