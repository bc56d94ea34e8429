package profiler

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/jobcontract"
)

// Placeholders of an argument template (docs/job-contract.md, "Unmodified
// PyTorch scripts"): where the command holds one, the profiler substitutes
// them per point and appends no contract flag.
const (
	PlaceholderWorkers    = "workers"
	PlaceholderBatch      = "batch"
	PlaceholderData       = "data"
	PlaceholderIterations = "iterations"
)

// Placeholders lists the placeholders a template may use.
func Placeholders() []string {
	return []string{PlaceholderWorkers, PlaceholderBatch, PlaceholderData, PlaceholderIterations}
}

// ThreadEnv names the variables that set a job's thread counts: each point
// sets them to the cores of its cpuset, so the caller's environment cannot
// change a matrix (torch takes its intra-op threads from OMP_NUM_THREADS).
var ThreadEnv = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}

// template is a command split into literal text and placeholders.
type template struct {
	args [][]tmplPart
	used map[string]bool
}

// tmplPart is literal text, or a placeholder when name is set.
type tmplPart struct{ text, name string }

// has reports whether the command holds any placeholder.
func (t template) has() bool { return len(t.used) > 0 }

// parseTemplate splits every argument of argv into literal text and
// {name} placeholders; "{{" and "}}" stand for literal braces. An unknown
// placeholder, or a lone brace, is an error naming the argument.
func parseTemplate(argv []string) (template, error) {
	t := template{used: map[string]bool{}}
	known := map[string]bool{}
	for _, p := range Placeholders() {
		known[p] = true
	}
	for i, a := range argv {
		parts, err := parseArg(a, known)
		if err != nil {
			return t, fmt.Errorf("command argument %d %q: %w (placeholders: {%s}; {{ and }} are literal braces)",
				i+1, a, err, strings.Join(Placeholders(), "}, {"))
		}
		for _, p := range parts {
			if p.name != "" {
				t.used[p.name] = true
			}
		}
		t.args = append(t.args, parts)
	}
	return t, nil
}

func parseArg(a string, known map[string]bool) ([]tmplPart, error) {
	var parts []tmplPart
	var lit strings.Builder
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case c == '{' && i+1 < len(a) && a[i+1] == '{', c == '}' && i+1 < len(a) && a[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '}':
			return nil, fmt.Errorf("a lone } at byte %d", i+1)
		case c == '{':
			end := strings.IndexByte(a[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("a { at byte %d is never closed", i+1)
			}
			name := a[i+1 : i+1+end]
			if !known[name] {
				return nil, fmt.Errorf("unknown placeholder {%s}", name)
			}
			if lit.Len() > 0 {
				parts = append(parts, tmplPart{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, tmplPart{name: name})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 || len(parts) == 0 {
		parts = append(parts, tmplPart{text: lit.String()})
	}
	return parts, nil
}

// expand substitutes the point's values.
func (t template) expand(vals map[string]string) []string {
	out := make([]string, len(t.args))
	for i, parts := range t.args {
		var b strings.Builder
		for _, p := range parts {
			if p.name != "" {
				b.WriteString(vals[p.name])
			} else {
				b.WriteString(p.text)
			}
		}
		out[i] = b.String()
	}
	return out
}

// TemplatePlaceholders returns the placeholders command uses (none: the
// contract's flags are appended), or an error naming a bad one.
func TemplatePlaceholders(command []string) ([]string, error) {
	t, err := parseTemplate(command)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range Placeholders() {
		if t.used[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// validateJob checks the command's template, the probe and the emulation
// settings; errors name the setting.
func (c *Config) validateJob() error {
	t, err := parseTemplate(c.Command)
	if err != nil {
		return err
	}
	if t.used[PlaceholderData] && c.DataDir == "" {
		return fmt.Errorf("command: {%s} needs a dataset directory (--data)", PlaceholderData)
	}
	return c.JobSetup.validate(c.Command)
}

// argv is the command of a point: the template expanded when the command
// holds placeholders, else the command with the contract's flags appended.
func (s *launcher) argv(pt point) []string {
	contract := jobcontract.Point{
		Batch:         s.cfg.Batch,
		Workers:       cmp.Or(pt.launchWorkers, Workers(pt.cpus, s.cfg.GPUs)),
		MaxIterations: s.meter.maxIterationsFor(pt),
		DataDir:       s.data.dataDirFor(pt),
		Synthetic:     pt.synthetic,
	}
	if s.tmpl.has() {
		return s.tmpl.expand(map[string]string{
			PlaceholderWorkers:    strconv.Itoa(contract.Workers),
			PlaceholderBatch:      strconv.Itoa(contract.Batch),
			PlaceholderData:       contract.DataDir,
			PlaceholderIterations: strconv.Itoa(contract.MaxIterations),
		})
	}
	// No placeholder: the command as given, its {{ and }} made braces
	// (the parser refuses a lone one), then the contract's flags.
	return append(s.tmpl.expand(nil), contract.Args()...)
}

// threads is the thread count of a point: the cores of its cpuset.
func threads(cpus float64) int { return max(1, int(math.Ceil(cpus))) }

// launchThreads is the intra-op thread count a launch at pt sets
// (ThreadEnv): the point's cores.
func (s *launcher) launchThreads(pt point) int { return threads(pt.cpus) }

// jobEnv is a point's environment on top of the runner's: the thread
// counts and the checkpoint's, then the user's own variables (Config.Env,
// which may override them), the probe's, and the contract's.
//
// A preemptible job (docs/job-contract.md) resumes from the checkpoint its
// environment names, and under Slurm finds one there by default
// ($SLURM_SUBMIT_DIR/synergy-checkpoints/JOBID, synergy's own environment
// being the runner's): every launch gets a fresh directory of its own in its
// metrics directory, so no launch resumes where another stopped (or from a
// "done" checkpoint, running no iteration), and requeue "none", so a signal
// never makes it requeue the Slurm job synergy runs in.
func (s *launcher) jobEnv(pt point, run *pointRun) []string {
	var env []string
	n := strconv.Itoa(s.launchThreads(pt))
	for _, k := range ThreadEnv {
		env = append(env, k+"="+n)
	}
	env = append(env,
		jobcontract.EnvCheckpointDir+"="+filepath.Join(run.metricsDir, "checkpoint"),
		jobcontract.EnvRequeue+"=none")
	env = append(env, s.cfg.Env...)
	env = append(env, s.probeEnv(pt, run)...)
	return append(env,
		jobcontract.EnvMetricsFile+"="+run.metricsPath,
		jobcontract.EnvPoint+"="+pt.label())
}

// pythonRE matches the names of Python interpreters: python, python3,
// python3.11, pypy3.
var pythonRE = regexp.MustCompile(`^(python|pypy)([0-9]+(\.[0-9]+)?)?$`)

// IsPython reports whether argv0 names a Python interpreter.
func IsPython(argv0 string) bool { return pythonRE.MatchString(filepath.Base(argv0)) }

// pythonOptsWithArg are the interpreter's options that take a separate
// argument.
var pythonOptsWithArg = map[string]bool{"-W": true, "-X": true, "--check-hash-based-pycs": true}

// JobNameFor names a job after its command: the script's name without
// ".py" for a Python interpreter (python3 train_imagenet.py ->
// train_imagenet; python3 -m pkg.train -> pkg.train), else the program's.
func JobNameFor(command []string) string {
	if len(command) == 0 {
		return ""
	}
	if !IsPython(command[0]) {
		return filepath.Base(command[0])
	}
	for i := 1; i < len(command); i++ {
		a := command[i]
		switch {
		case a == "-m" && i+1 < len(command):
			return command[i+1]
		case strings.HasPrefix(a, "-m") && len(a) > 2:
			return a[2:]
		case a == "-c":
			return filepath.Base(command[0])
		case pythonOptsWithArg[a]:
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			return strings.TrimSuffix(filepath.Base(a), ".py")
		}
	}
	return filepath.Base(command[0])
}
