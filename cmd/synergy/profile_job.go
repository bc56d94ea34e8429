package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/profiler"
)

// Flag names of `synergy profile` about how the job runs: the injected
// DataLoader probe, its loader-only mode, and the job's environment.
const (
	flagProbe       = "probe"
	flagEmulateStep = "emulate-step"
	flagEmulateGPU  = "emulate-gpu"
	flagModel       = "model"
	flagEnv         = "env"
	// flagProgressRegex: the log lines that count a job's iterations when
	// it writes no metrics stream (profiler/progress.go).
	flagProgressRegex = "progress-regex"
	// flagJobDir: the job's working directory.
	flagJobDir = "job-dir"
)

// profileJobDescription is added to `synergy profile --help`.
const profileJobDescription = `

An unmodified script is profiled through an argument template: where SCRIPT's
arguments hold {workers}, {batch}, {data} or {iterations}, they are filled in per
point and nothing is appended ({{ and }} are literal braces). A Python job gets the
DataLoader probe (--probe): it writes the metrics stream from the script's own
DataLoader, caps the run, sets the workers when no {workers} does, and with
--emulate-step or --emulate-gpu/--model drives the loader at a GPU's pace without
running the model (the profile is then labelled emulated). Every point sets
OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS to its cores.

  synergy profile --data /datasets/imagenet --emulate-gpu v100 --model resnet18 \
      --cpus 1,2 --mem-limits 4GiB,8GiB -- python3 main.py {data} -j {workers} -b {batch}`

// withJobFlags adds the flags of this file, and their help, to `synergy
// profile`.
func withJobFlags(c *cli.Command) *cli.Command {
	c.Flags = append(c.Flags, profileJobFlags()...)
	c.Description += profileJobDescription
	return c
}

// profileJobFlags are the flags of this file.
func profileJobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagProbe, DefaultText: "torch when SCRIPT is a Python interpreter, else none",
			Usage: "`KIND` of probe injected into the job: torch (the DataLoader probe on PYTHONPATH: metrics, iteration cap, workers; docs/job-contract.md) or none"},
		&cli.DurationFlag{Name: flagEmulateStep,
			Usage: "loader-only mode: the probe drives the job's DataLoader with a wait of `DURATION` per step and never runs the model (e.g. 33ms)"},
		&cli.StringFlag{Name: flagEmulateGPU,
			Usage: "loader-only mode at the step of --model on GPU `NAME` (v100, p100, k80) from the step table (docs/job-contract.md)"},
		&cli.StringFlag{Name: flagModel, Usage: "with --emulate-gpu: the table's model `NAME`, e.g. resnet18, mobilenet_v2, lstm, m5"},
		&cli.StringFlag{Name: flagProgressRegex,
			Usage: "for a job that writes no metrics stream: the `REGEXP` of its output lines that say how far it got; its one group, if any, is the iterations run in the pass so far (e.g. '\\| +([0-9]+)/ *[0-9]+ batches'), else each matching line is one iteration"},
		&cli.StringFlag{Name: flagJobDir, DefaultText: "a directory inside the run's work directory, removed with it (the caller's for python -m)",
			Usage: "run the job in `DIR` (local runner), where the files it writes where it runs (checkpoints, model.pt) land"},
		&cli.StringSliceFlag{Name: flagEnv,
			Usage: "set `KEY=VALUE` in the job's environment under both runners (repeatable; may override the per-point thread counts)"},
	}
}

// envKeyRE is a portable environment variable name.
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseJobFlags reads the probe, loader-only and environment flags.
func parseJobFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	switch p := c.String(flagProbe); p {
	case "":
		cfg.Probe = profiler.ProbeAuto
	case "torch":
		cfg.Probe = profiler.ProbeTorch
	case "none", "off":
		cfg.Probe = profiler.ProbeNone
	default:
		return fmt.Errorf("--%s: %q is not torch or none", flagProbe, p)
	}
	if cfg.EmulateStep = c.Duration(flagEmulateStep); c.IsSet(flagEmulateStep) && !(cfg.EmulateStep >= time.Millisecond && cfg.EmulateStep <= time.Minute) {
		return fmt.Errorf("--%s: %v is not a step between 1ms and 1m", flagEmulateStep, cfg.EmulateStep)
	}
	cfg.EmulateGPU, cfg.Model = strings.TrimSpace(c.String(flagEmulateGPU)), strings.TrimSpace(c.String(flagModel))
	for _, f := range []struct{ name, v string }{{flagEmulateGPU, cfg.EmulateGPU}, {flagModel, cfg.Model}} {
		if f.v != "" && !envKeyRE.MatchString(strings.ReplaceAll(strings.ReplaceAll(f.v, "-", "_"), ".", "_")) {
			return fmt.Errorf("--%s: %q is not a name", f.name, f.v)
		}
	}
	switch {
	case cfg.EmulateStep > 0 && cfg.EmulateGPU != "":
		return fmt.Errorf("--%s and --%s: give one or the other", flagEmulateStep, flagEmulateGPU)
	case cfg.EmulateGPU != "" && cfg.Model == "":
		return fmt.Errorf("--%s: needs --%s, the model whose step to take from the table (e.g. resnet18)", flagEmulateGPU, flagModel)
	case cfg.Model != "" && cfg.EmulateGPU == "":
		return fmt.Errorf("--%s: only with --%s", flagModel, flagEmulateGPU)
	case (cfg.EmulateStep > 0 || cfg.EmulateGPU != "") && cfg.Probe == profiler.ProbeNone:
		return fmt.Errorf("--%s none: the loader-only mode (--%s, --%s) is the probe's", flagProbe, flagEmulateStep, flagEmulateGPU)
	}
	for _, kv := range c.StringSlice(flagEnv) {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envKeyRE.MatchString(k):
			return fmt.Errorf("--%s: %q is not KEY=VALUE", flagEnv, kv)
		case strings.HasPrefix(k, "SYNERGY_"):
			return fmt.Errorf("--%s: %s is the profiler's to set per point (use --%s, --%s, --%s)", flagEnv, k, flagProbe, flagEmulateStep, flagEmulateGPU)
		}
		cfg.Env = append(cfg.Env, kv)
	}
	cfg.JobDir = c.String(flagJobDir)
	cfg.ProgressRegex = c.String(flagProgressRegex)
	if cfg.ProgressRegex != "" {
		if _, err := regexp.Compile(cfg.ProgressRegex); err != nil {
			return fmt.Errorf("--%s: %w", flagProgressRegex, err)
		}
	}
	used, err := profiler.TemplatePlaceholders(cfg.Command)
	if err != nil {
		return err
	}
	if slices.Contains(used, profiler.PlaceholderData) && cfg.DataDir == "" {
		return fmt.Errorf("--%s: the command's {%s} needs the dataset directory", flagData, profiler.PlaceholderData)
	}
	return nil
}
