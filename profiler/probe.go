package profiler

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/models/pytorch"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Values of JobSetup.Probe.
const (
	ProbeAuto  = ""      // torch when the command is a Python interpreter
	ProbeTorch = "torch" // inject the DataLoader probe
	ProbeNone  = "none"  // inject nothing
)

// JobSetup says how the job is run beside its command: the injected
// DataLoader probe and its loader-only mode (docs/job-contract.md,
// "Unmodified PyTorch scripts").
type JobSetup struct {
	// Probe is ProbeAuto, ProbeTorch or ProbeNone.
	Probe string
	// EmulateStep runs the probe's loader-only mode with this fixed step.
	EmulateStep time.Duration
	// EmulateGPU and Model run the loader-only mode with the model's step
	// on that GPU from the step table (models/pytorch/synergy_metrics.py).
	EmulateGPU, Model string
	// ProgressRegex, for a job that writes no metrics stream, matches the
	// lines of its output that say how far it got (progress.go); "": none.
	ProgressRegex string
	// JobDir is the job's working directory (the local runner); "": a
	// directory of its own inside the run's work directory, removed with
	// it, so that the files a script writes where it runs (checkpoints,
	// model.pt) land neither in the caller's directory nor beside another
	// run's.
	JobDir string
}

func (j JobSetup) validate(command []string) error {
	if _, err := compileProgress(j.ProgressRegex); err != nil {
		return err
	}
	switch j.Probe {
	case ProbeAuto, ProbeTorch, ProbeNone:
	default:
		return fmt.Errorf("probe: %q is not torch or none", j.Probe)
	}
	switch {
	case j.EmulateStep < 0:
		return fmt.Errorf("emulate-step: %v is negative", j.EmulateStep)
	case j.EmulateStep > 0 && j.EmulateGPU != "":
		return errors.New("emulate-step and emulate-gpu: give one or the other")
	case j.EmulateGPU != "" && j.Model == "":
		return errors.New("emulate-gpu: needs the model whose step to take from the table (--model, e.g. resnet18)")
	case j.Model != "" && j.EmulateGPU == "":
		return errors.New("model: only with --emulate-gpu")
	case j.emulate() && !j.probeOn(command):
		return errors.New("emulate-step/emulate-gpu: the loader-only mode is the probe's; it needs --probe torch")
	}
	return nil
}

func (j JobSetup) emulate() bool { return j.EmulateStep > 0 || j.EmulateGPU != "" }

// probeOn reports whether the probe is injected into the job.
func (j JobSetup) probeOn(command []string) bool {
	return j.Probe == ProbeTorch || (j.Probe == ProbeAuto && len(command) > 0 && IsPython(command[0]))
}

// jobState is what a sweep derives from the command once: its template and
// the probe's directory.
type jobState struct {
	// jobDir is the job's working directory; callerDir the directory
	// relative paths of the command name (the caller's).
	jobDir, callerDir string
	tmpl              template
	probeDir          string // "" when no probe is injected
	// progressRE matches the job's progress lines (ProgressRegex); nil: none.
	progressRE *regexp.Regexp
}

// setupJob parses the command's template and writes the probe into the
// sweep's work directory when it is injected.
func (s *launcher) setupJob() error {
	var err error
	if s.tmpl, err = parseTemplate(s.cfg.Command); err != nil {
		return err
	}
	if s.progressRE, err = compileProgress(s.cfg.ProgressRegex); err != nil {
		return err
	}
	s.meter.tmpl = &s.tmpl
	if err := s.setupJobDir(); err != nil {
		return err
	}
	if !s.cfg.probeOn(s.cfg.Command) {
		if s.tmpl.has() && s.cfg.StallBreakdown && s.rec.prof.StepOnly == nil {
			s.rec.warnf("no step-only run: the command is a template, so it cannot be asked for synthetic data, and it is not a Python job the probe could replay (stall breakdown off)")
		}
		return nil
	}
	dir := filepath.Join(s.workDir, "probe")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := pytorch.WriteProbe(dir); err != nil {
		return err
	}
	s.probeDir = dir
	return nil
}

// stepOnlyPossible reports whether the job can be asked for a step-only
// run: through the appended --synthetic-data, or, for a template (an
// unmodified script), through the probe's replay mode.
func (s *launcher) stepOnlyPossible() bool { return !s.tmpl.has() || s.probeDir != "" }

// stepOnlySource says how the step-only run measures the step alone.
func (s *launcher) stepOnlySource() string {
	if s.tmpl.has() {
		return sensitivity.StepOnlyProbeReplay
	}
	return sensitivity.StepOnlySyntheticData
}

// reportPath is where the probe writes its report for a point.
func (run *pointRun) reportPath() string { return filepath.Join(run.metricsDir, "probe-report.json") }

// probeEnv is the probe's environment for a point: its directory first on
// PYTHONPATH (chaining the job's own), the report, the iteration cap, the
// worker count when neither a placeholder nor an appended flag gives it,
// and the loader-only mode.
func (s *launcher) probeEnv(pt point, run *pointRun) []string {
	if s.probeDir == "" {
		return nil
	}
	pp := s.probeDir
	if own := s.jobPythonPath(); own != "" {
		pp += string(os.PathListSeparator) + own
	}
	env := []string{
		"PYTHONPATH=" + pp,
		pytorch.ProbeEnvReport + "=" + run.reportPath(),
		pytorch.ProbeEnvMaxIterations + "=" + strconv.Itoa(s.meter.maxIterationsFor(pt)),
	}
	if s.tmpl.has() && !s.tmpl.used[PlaceholderWorkers] {
		env = append(env, pytorch.ProbeEnvWorkers+"="+strconv.Itoa(cmp.Or(pt.launchWorkers, Workers(pt.cpus, s.cfg.GPUs))))
	}
	switch j := s.cfg.JobSetup; {
	case pt.synthetic && s.tmpl.has():
		// A template cannot be asked for synthetic data: the probe replays
		// the first batch (a step-only run is never emulated: the loader-only
		// mode's step is known).
		env = append(env, pytorch.ProbeEnvReplay+"=1")
	case j.EmulateStep > 0:
		env = append(env, pytorch.ProbeEnvStepS+"="+strconv.FormatFloat(j.EmulateStep.Seconds(), 'g', -1, 64))
	case j.EmulateGPU != "":
		env = append(env, pytorch.ProbeEnvEmulateGPU+"="+j.EmulateGPU, pytorch.ProbeEnvModel+"="+j.Model)
	}
	return env
}

// jobPythonPath is the PYTHONPATH the job would have without the probe:
// the user's (Config.Env), else, for the local runner, the one it inherits.
func (s *launcher) jobPythonPath() string {
	for i := len(s.cfg.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(s.cfg.Env[i], "PYTHONPATH="); ok {
			return v
		}
	}
	if s.deps.Runner != nil && s.deps.Runner.Name() == "local" {
		return os.Getenv("PYTHONPATH")
	}
	return ""
}

// probeReport is what the probe's JSON report says (docs/job-contract.md,
// "Exit status and the report"); the profiler reads these keys only.
type probeReport struct {
	State    string   `json:"state"`
	Stream   string   `json:"stream"`
	Fallback string   `json:"fallback"`
	Notes    []string `json:"notes"`
	Emulated *struct {
		StepS  float64 `json:"step_s"`
		Source string  `json:"source"`
		Label  string  `json:"label"`
	} `json:"emulated"`
	Loaders []struct {
		Site       string `json:"site"`
		NumWorkers int    `json:"num_workers"`
		Primary    bool   `json:"primary"`
		Batches    int    `json:"batches"`
		// Len is len(loader), the batches of one pass (0: not known).
		Len int `json:"len"`
		// CPUs and WorkerCPUs are the affinity of the iterating process
		// and of each worker process (by pid) at the loader's first batch.
		CPUs       []int            `json:"cpus"`
		WorkerCPUs map[string][]int `json:"worker_cpus"`
	} `json:"loaders"`
}

// maxProbeReport bounds the probe's report, written in the job's process
// (a few KiB: one entry per DataLoader).
const maxProbeReport = 4 << 20

// readProbe reads the point's probe report and keeps a copy beside its
// timeline; nil when the probe wrote none.
func (s *launcher) readProbe(pt point, run *pointRun) *probeReport {
	body := s.probeBody(pt, run, true, false)
	if body == nil {
		return nil
	}
	var r probeReport
	if err := json.Unmarshal(body, &r); err != nil {
		s.rec.warnf("%s: the probe's report is not JSON: %v", pt.label(), err)
		return nil
	}
	return &r
}

// probeBody reads the launch's probe report as it is now, made final
// (finalReport); nil when there is none. keep: keep it beside the timeline
// under pt's name (the launch's end keeps its last report, named for the
// point it was read at, one a launch). warn: say why it could not be read.
func (s *launcher) probeBody(pt point, run *pointRun, warn, keep bool) []byte {
	if s.probeDir == "" {
		return nil
	}
	f, err := jobcontract.OpenJobFile(run.reportPath())
	if err != nil {
		if warn && !errors.Is(err, os.ErrNotExist) {
			s.rec.warnf("%s: the probe's report: %v", pt.label(), err)
		}
		return nil
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, maxProbeReport+1))
	if err != nil {
		return nil
	}
	if len(body) > maxProbeReport {
		if warn {
			s.rec.warnf("%s: the probe's report is above %d MiB: not read", pt.label(), maxProbeReport>>20)
		}
		return nil
	}
	streamLines := len(run.m.all)
	if run.fromLog { // the job's log lines, not a stream it wrote
		streamLines = 0
	}
	body = finalReport(body, streamLines)
	if keep && s.timeline != nil {
		if err := s.timeline.WriteFile(pt.fileLabel()+".probe.json", body, 0o644); err != nil && warn {
			s.rec.warnf("timeline: %v", err)
		}
	}
	return body
}

// probeLoaderLen is the batches a pass of the launch's measured loader
// holds (len(loader), from the probe's report as it is now); 0 when the
// probe does not know it.
func (s *launcher) probeLoaderLen(l *launch) int {
	if s.probeDir == "" {
		return 0
	}
	f, err := jobcontract.OpenJobFile(l.run.reportPath())
	if err != nil {
		return 0
	}
	defer f.Close()
	var r probeReport
	if json.NewDecoder(io.LimitReader(f, maxProbeReport)).Decode(&r) != nil {
		return 0
	}
	for _, ld := range r.Loaders {
		if ld.Primary && ld.Len > 0 && ld.Len < 1<<40 {
			return ld.Len
		}
	}
	return 0
}

// finalReport makes a probe report final once its point has ended: a job
// the profiler stopped (SIGKILL at convergence or a cap) never ran the
// probe's exit hook, so its report still says "running"; it becomes
// "stopped", with a note. A report that says no stream was written while
// the point's stream has lines (lines reported: the script's own, the
// probe having stood down before it wrote) says "script". Anything else,
// or a body that is not a JSON object, is returned as it is.
func finalReport(body []byte, lines int) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	changed := false
	if m["state"] == "running" {
		m["state"] = "stopped"
		notes, _ := m["notes"].([]any)
		m["notes"] = append(notes, "stopped by synergy when the point ended: the state and counts are those of the last report the probe wrote")
		changed = true
	}
	if m["stream"] == "none" && lines > 0 {
		m["stream"] = "script"
		changed = true
	}
	if !changed {
		return body
	}
	out, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return body
	}
	return append(out, '\n')
}

// errEmulationRefused ends a sweep whose GPU emulation the job cannot
// honour.
var errEmulationRefused = errors.New("GPU emulation refused")

// errProbeConfig is returned for a point whose probe refused its settings:
// every other point would be refused alike.
var errProbeConfig = errors.New("the DataLoader probe refused its settings")

// applyProbe records what the probe's report says about a point: its
// settings refused (an error that ends the sweep), no loader seen (the
// fallback, with its notes), the loader-only step used.
func (s *launcher) applyProbe(pt point, r *probeReport, end pointEnd) error {
	if r == nil {
		return nil
	}
	if r.State == "error" && end.res.ExitCode == pytorch.ProbeExitConfig {
		return fmt.Errorf("%w (check --emulate-gpu, --model, --emulate-step): %s", errProbeConfig, strings.Join(r.Notes, "; "))
	}
	failed := end.err != nil || end.res.OOMKilled || (end.stopReason == "" && end.res.ExitCode != 0)
	// The step-only run feeds one synthetic batch again: no loader to see.
	if r.Fallback != "" && r.Stream != "script" && !pt.synthetic {
		s.noLoader = true
	}
	if r.Fallback != "" && !failed && !pt.synthetic {
		by := "wall time only where its iterations are known ({iterations}, run to its end), else not at all (the cell says how to get a stream)"
		switch {
		case r.Stream == "script": // measure reads the script's stream, not the wall clock
			by = "the script's own metrics stream"
		case s.progressRE != nil:
			by = "the job's own log lines (--progress-regex)"
		}
		msg := fmt.Sprintf("%s: the probe saw no DataLoader batch, so the point is measured from %s", pt.label(), by)
		if len(r.Notes) > 0 {
			msg += ": " + strings.Join(r.Notes, "; ")
		}
		s.rec.warnf("%s", msg)
	}
	if r.Stream == "script" && s.cfg.emulate() {
		// Measuring on would time the script's own step on this machine's
		// CPU (a ResNet-18 at 2.7 samples/s) under an emulated GPU's name.
		return fmt.Errorf("%w: the script writes the metrics stream itself (the contract's helper), so the probe stood down and cannot emulate the GPU step: "+
			"its points would measure the script's real step on this machine, not the emulated GPU's; leave synergy's --emulate-gpu/--emulate-step off "+
			"and pass the script its own emulation flags (the reference jobs take --emulate-gpu)", errEmulationRefused)
	}
	if r.Emulated != nil && r.Emulated.Label != "" {
		s.rec.emulatedLabel = r.Emulated.Label
	}
	s.checkAffinity(pt, r)
	return nil
}

// checkAffinity warns when a loader's process or worker could run on more
// or fewer cores than the point's cpuset holds.
func (s *launcher) checkAffinity(pt point, r *probeReport) {
	want := threads(pt.cpus)
	for _, l := range r.Loaders {
		bad := l.CPUs != nil && len(l.CPUs) != want
		for _, c := range l.WorkerCPUs {
			bad = bad || len(c) != want
		}
		if bad {
			s.rec.warnf("%s: the loader built at %s ran on CPUs %v with workers on %v, not on the point's %d cores", pt.label(), l.Site, l.CPUs, l.WorkerCPUs, want)
		}
	}
}

// setupJobDir chooses the job's working directory (JobSetup.JobDir, else
// one inside the run's work directory). A Python command run as a module
// (-m) finds its package through the directory it starts in: it keeps the
// caller's.
func (s *launcher) setupJobDir() error {
	var err error
	if s.callerDir, err = os.Getwd(); err != nil {
		return fmt.Errorf("job-dir: the current directory: %w", err)
	}
	if d := s.cfg.JobDir; d != "" {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("job-dir: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("job-dir: %s is not a directory", d)
		}
		s.jobDir, err = filepath.Abs(d)
		return err
	}
	if len(s.cfg.Command) > 0 && IsPython(s.cfg.Command[0]) && slices.ContainsFunc(s.cfg.Command[1:], func(a string) bool { return strings.HasPrefix(a, "-m") }) {
		s.jobDir = s.callerDir
		return nil
	}
	s.jobDir = filepath.Join(s.workDir, "job")
	if err := os.Mkdir(s.jobDir, 0o755); err != nil {
		return fmt.Errorf("job-dir: %w", err)
	}
	return linkEntries(s.callerDir, s.jobDir)
}

// maxLinkedEntries bounds the entries of the caller's directory that
// linkEntries mirrors: a project's directory holds tens; a larger one is
// refused, naming --job-dir.
const maxLinkedEntries = 10000

// linkEntries makes, in the job's fresh directory, a symlink to every entry
// of the caller's: whatever a script reads by a relative name (its own
// modules, `--cfg=conf/a.yaml`, a default `./data/wikitext-2`) is found as
// in the caller's directory, while a new file it writes there (a
// checkpoint, model.pt) lands in the job's directory, not the caller's. A
// file that already exists in the caller's directory is written through
// its link, as it would have been without one.
func linkEntries(from, to string) error {
	d, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("job-dir: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(maxLinkedEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("job-dir: list %s: %w", from, err)
	}
	if len(names) > maxLinkedEntries {
		return fmt.Errorf("job-dir: %s holds more than %d entries to mirror for the job: run synergy from the script's directory, or choose the job's with --job-dir", from, maxLinkedEntries)
	}
	for _, n := range names {
		if err := os.Symlink(filepath.Join(from, n), filepath.Join(to, n)); err != nil {
			return fmt.Errorf("job-dir: %w", err)
		}
	}
	return nil
}
