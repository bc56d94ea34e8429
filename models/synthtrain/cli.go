package synthtrain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
)

// Flag names of synthtrain's own (the contract's are jobcontract.Flag*).
const (
	FlagBatchShort    = "b"
	FlagWorkersShort  = "j"
	FlagMaxIterAlias  = "max_iterations"
	FlagPreset        = "preset"
	FlagGPUStep       = "gpu-step"
	FlagPrefetch      = "prefetch"
	FlagSeed          = "seed"
	FlagDir           = "dir"
	FlagBytes         = "bytes"
	FlagClasses       = "classes"
	FlagCheckpointN   = "checkpoint-every"
	exitOK, exitFail  = 0, 1
	exitUsage         = 2
	defaultPreset     = "image"
	defaultGenClasses = 10
	// defaultPrefetchPerWorker is the queue's bound per worker when
	// --prefetch is not given (PyTorch's prefetch_factor default).
	defaultPrefetchPerWorker = 2
)

// UsageError is a bad command line; Main exits 2 on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// ParseTrainArgs turns `synthtrain [train]` arguments into a config. Flags
// may repeat (the last wins, so the profiler's appended flags win), take
// one or two dashes, and `-b 32` or `--batch=32`. Batch and GPU step
// default to the preset's values, workers to the CPUs this process may run
// on, prefetch to 2 × workers. It returns flag.ErrHelp for -h/--help.
func ParseTrainArgs(args []string) (TrainConfig, error) {
	fs := flag.NewFlagSet("synthtrain train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		cfg    TrainConfig
		preset string
		seed   uint64
	)
	fs.IntVar(&cfg.Batch, jobcontract.FlagBatch, 0, "")
	fs.IntVar(&cfg.Batch, FlagBatchShort, 0, "")
	fs.IntVar(&cfg.Workers, jobcontract.FlagWorkers, 0, "")
	fs.IntVar(&cfg.Workers, FlagWorkersShort, 0, "")
	fs.IntVar(&cfg.MaxIterations, jobcontract.FlagMaxIterations, 0, "")
	fs.IntVar(&cfg.MaxIterations, FlagMaxIterAlias, 0, "")
	fs.StringVar(&cfg.Data, jobcontract.FlagData, "", "")
	fs.BoolVar(&cfg.Synthetic, jobcontract.FlagSyntheticData, false, "")
	fs.StringVar(&preset, FlagPreset, defaultPreset, "")
	fs.DurationVar(&cfg.GPUStep, FlagGPUStep, 0, "")
	fs.IntVar(&cfg.Prefetch, FlagPrefetch, 0, "")
	fs.Uint64Var(&seed, FlagSeed, 1, "")
	fs.IntVar(&cfg.CheckpointEvery, FlagCheckpointN, 0, "")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	p, err := LookupPreset(preset)
	if err != nil {
		return cfg, usageErrorf("--%s: %v", FlagPreset, err)
	}
	cfg.Preset, cfg.Seed = p, seed
	if !set[jobcontract.FlagBatch] && !set[FlagBatchShort] {
		cfg.Batch = p.Batch
	}
	if !set[FlagGPUStep] {
		cfg.GPUStep = p.GPUStep
	}
	if !set[jobcontract.FlagWorkers] && !set[FlagWorkersShort] {
		cfg.Workers = runtime.NumCPU()
	}
	if !set[FlagPrefetch] {
		cfg.PrefetchPerWorker = defaultPrefetchPerWorker
		cfg.Prefetch = defaultPrefetchPerWorker * max(cfg.Workers, 1)
	}
	switch {
	case cfg.Batch < 1:
		return cfg, usageErrorf("--%s: %d must be >= 1", jobcontract.FlagBatch, cfg.Batch)
	case cfg.Workers < 1 || cfg.Workers > MaxWorkers:
		return cfg, usageErrorf("--%s: %d must be in [1, %d]", jobcontract.FlagWorkers, cfg.Workers, MaxWorkers)
	case cfg.MaxIterations < 0:
		return cfg, usageErrorf("--%s: %d must be >= 0 (0: until stopped)", jobcontract.FlagMaxIterations, cfg.MaxIterations)
	case cfg.Prefetch < 1:
		return cfg, usageErrorf("--%s: %d must be >= 1", FlagPrefetch, cfg.Prefetch)
	case cfg.GPUStep < 0:
		return cfg, usageErrorf("--%s: %s must be >= 0", FlagGPUStep, cfg.GPUStep)
	case cfg.CheckpointEvery < 0:
		return cfg, usageErrorf("--%s: %d must be >= 0 (0: only on the preemption signal and at the end)", FlagCheckpointN, cfg.CheckpointEvery)
	case cfg.Data == "" && !cfg.Synthetic:
		return cfg, usageErrorf("--%s: required (a DIR/<class>/<file> tree), or give --%s", jobcontract.FlagData, jobcontract.FlagSyntheticData)
	}
	return cfg, nil
}

// ParseGenArgs turns `synthtrain gen` arguments into a config.
func ParseGenArgs(args []string) (GenConfig, error) {
	fs := flag.NewFlagSet("synthtrain gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		cfg           GenConfig
		preset, bytes string
	)
	fs.StringVar(&cfg.Dir, FlagDir, "", "")
	fs.StringVar(&bytes, FlagBytes, "", "")
	fs.StringVar(&preset, FlagPreset, defaultPreset, "")
	fs.Uint64Var(&cfg.Seed, FlagSeed, 1, "")
	fs.IntVar(&cfg.Classes, FlagClasses, defaultGenClasses, "")
	fs.IntVar(&cfg.Workers, jobcontract.FlagWorkers, runtime.NumCPU(), "")
	fs.IntVar(&cfg.Workers, FlagWorkersShort, runtime.NumCPU(), "")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	p, err := LookupPreset(preset)
	if err != nil {
		return cfg, usageErrorf("--%s: %v", FlagPreset, err)
	}
	cfg.Preset = p
	switch {
	case cfg.Dir == "":
		return cfg, usageErrorf("--%s: required", FlagDir)
	case bytes == "":
		return cfg, usageErrorf("--%s: required (e.g. 256MiB)", FlagBytes)
	case cfg.Classes < 1:
		return cfg, usageErrorf("--%s: %d must be >= 1", FlagClasses, cfg.Classes)
	case cfg.Workers < 1:
		return cfg, usageErrorf("--%s: %d must be >= 1", jobcontract.FlagWorkers, cfg.Workers)
	}
	if cfg.Bytes, err = units.ParseBytes(bytes); err != nil {
		return cfg, usageErrorf("--%s: %v", FlagBytes, err)
	}
	if cfg.Bytes <= 0 {
		return cfg, usageErrorf("--%s: %q must be > 0", FlagBytes, bytes)
	}
	return cfg, nil
}

// parseFlags parses and refuses stray positional arguments, which would
// otherwise silently stop the parse before the profiler's flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{Msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	return nil
}

// Usage is the text of `synthtrain --help`.
func Usage() string {
	return `synthtrain: a reference training job for synergy's profiler.
It loads real files with real CPU work and emulates the GPU step with a timed
wait (GPEmu-style), following docs/job-contract.md.

usage:
  synthtrain [train] --data DIR [flags]    train (the default command)
  synthtrain gen --dir DIR --bytes SIZE [--preset P] [--seed N] [--classes N] [--workers N]

train flags (repeatable, the last wins; -x and --x are the same):
  -b, --batch N              samples per batch (default: the preset's)
  -j, --workers N            loader goroutines (default: CPUs in the affinity mask)
  --max-iterations N         stop with exit 0 after N iterations (also --max_iterations; 0: never)
  --data DIR                 dataset: DIR/<class>/<file>
  --synthetic-data           read no files; feed one pre-made batch (still emulates the GPU step)
  --preset ` + PresetNames() + `   workload kind (default image)
  --gpu-step DURATION        emulated GPU time per batch, e.g. 8ms (default: the preset's)
  --prefetch N               batches queued ahead of the loop (default 2 x workers, following
                             a worker count changed through the control channel)
  --seed N                   shuffle and augmentation seed (default 1)
  --checkpoint-every N       also save the checkpoint every N iterations (default 0: on the
                             preemption signal and at the end only)

gen flags:
  --dir DIR                  where to write (created; must be empty or hold the same dataset)
  --bytes SIZE               about this much in total: 256MiB, 1GiB, 500MB
  --preset P, --seed N       as above; --classes N: class directories (default 10)
  -j, --workers N            encoders in parallel (default: CPUs); output does not depend on it

presets (defaults calibrated on a 2-core machine):
` + PresetTable() + `
environment:
  ` + jobcontract.EnvMetricsFile + `   append one JSON line per iteration (iter, samples, data_wait_s,
                         step_s, ts, epoch, step_intended_s, emulated)
  ` + jobcontract.EnvPoint + `          label of the profiling point, echoed in the log
  ` + jobcontract.EnvControlFile + `   with ` + jobcontract.EnvControlAckFile + `: the control channel. Between
                         batches, apply the JSON commands appended to it ({"seq":1,"workers":4},
                         {"seq":2,"replay":true}) and answer each, and a hello (seq 0) at the
                         first batch, in the ack file (docs/job-contract.md)
  ` + EnvCheckpointDir + ` checkpoint directory (default under Slurm:
                         $SLURM_SUBMIT_DIR/synergy-checkpoints/$SLURM_JOB_ID; outside Slurm: none).
                         A start finds the checkpoint there and resumes from it
  ` + EnvRequeue + `        after the checkpoint on SIGUSR1: requeue (default under Slurm:
                         scontrol requeue), hold (scontrol requeuehold) or none

signals: SIGUSR1 (sbatch --signal=B:USR1@GRACE; the batch script must exec synthtrain)
  saves the checkpoint at the end of the iteration in progress, asks Slurm to
  requeue the job and exits 3; SIGTERM saves and exits 3 without a requeue; a
  second SIGTERM, or SIGINT, stops at once without saving.

exit status: 0 done, 1 failed, 2 bad command line, 3 stopped by a signal at an
iteration boundary (checkpoint saved when there is a directory).
`
}

// Stop asks a training run to stop at the end of the iteration in
// progress, saving its checkpoint; with Requeue it then asks Slurm to
// requeue the job (EnvRequeue).
type Stop struct {
	Signal  string
	Requeue bool
}

// Main runs the command line and returns the exit status. getenv reads the
// environment (os.Getenv in production). While it runs it turns SIGUSR1
// into a Stop with a requeue (the preemption signal of Lightning's and
// submitit's convention), SIGTERM into a Stop without one (a second
// SIGTERM cancels at once, as the first does for gen), and SIGINT into a
// cancel.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	stops := make(chan Stop, 1)
	done := make(chan struct{})
	defer close(done)
	// gen has no iteration to end at: SIGTERM cancels it at once, as before
	// training took the signal for a stop at an iteration's end.
	gen := len(args) > 0 && args[0] == "gen"
	go func() {
		terms := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				switch s {
				case os.Interrupt:
					cancel()
				case syscall.SIGTERM:
					if terms++; terms > 1 || gen {
						cancel()
						continue
					}
					select {
					case stops <- Stop{Signal: "SIGTERM"}:
					default:
					}
				default:
					select {
					case stops <- Stop{Signal: "SIGUSR1", Requeue: true}:
					default:
					}
				}
			}
		}
	}()
	return mainStops(ctx, stops, args, getenv, stdout, stderr)
}

func mainStops(ctx context.Context, stops <-chan Stop, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "train"
	if len(args) > 0 && (args[0] == "train" || args[0] == "gen" || args[0] == "help") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "help":
		err = flag.ErrHelp
	case "gen":
		err = runGen(ctx, args, stdout)
	default:
		err = runTrain(ctx, stops, args, getenv, stderr)
	}
	var ue *UsageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, ErrPreempted):
		return ExitPreempted
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, Usage())
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "synthtrain %s: %v (see synthtrain --help)\n", cmd, err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "synthtrain %s: %v\n", cmd, err)
		return exitFail
	}
}

func runGen(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := ParseGenArgs(args)
	if err != nil {
		return err
	}
	res, err := Generate(ctx, cfg)
	if err != nil {
		return err
	}
	m := res.Manifest
	verb := "made"
	if res.Reused {
		verb = "already there:"
	}
	fmt.Fprintf(stdout, "%s %d %s files, %s (%d bytes, asked %s) in %d classes under %s, seed %d, in %.1fs\n",
		verb, m.Files, m.Preset, units.FormatBytes(m.Bytes), m.Bytes, units.FormatBytes(m.RequestedBytes), min(m.Classes, m.Files), cfg.Dir, m.Seed, res.Elapsed.Seconds())
	return nil
}

func runTrain(ctx context.Context, stops <-chan Stop, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := ParseTrainArgs(args)
	if err != nil {
		return err
	}
	mode, err := requeueMode(getenv)
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	if dir := CheckpointDir(getenv); dir != "" {
		cfg.Checkpoint = &CheckpointConfig{Dir: dir, Every: cfg.CheckpointEvery}
	}
	preempt, stopped, getStop, trainDone := watchStops(stops, stderr)
	defer close(trainDone)
	cfg.Preempt = preempt
	// One P per loader worker plus one for the training loop, as PyTorch
	// runs the loop and each worker as its own process: the kernel then
	// wakes the loop on time after its emulated step instead of leaving it
	// queued behind a decoding goroutine until Go preempts it (~10 ms
	// late). The cgroup's CPU limit still caps what they all may use.
	if getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), cfg.Workers+1)))
	}
	var metrics io.Writer
	if path := getenv(jobcontract.EnvMetricsFile); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("open metrics file (%s): %w", jobcontract.EnvMetricsFile, err)
		}
		defer f.Close()
		metrics = f
	}
	cmdFile, ackFile := getenv(jobcontract.EnvControlFile), getenv(jobcontract.EnvControlAckFile)
	switch {
	case cmdFile != "" && ackFile != "":
		cfg.Control = &Control{CommandFile: cmdFile, AckFile: ackFile, Log: stderr}
		if getenv("GOMAXPROCS") == "" {
			// As above, for a worker count the profiler changes.
			cfg.Control.OnWorkers = func(n int) { runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), n+1)) }
		}
	case cmdFile != "" || ackFile != "":
		fmt.Fprintf(stderr, "synthtrain: %s and %s go together; only one is set, so the control channel is off\n",
			jobcontract.EnvControlFile, jobcontract.EnvControlAckFile)
	}
	point := getenv(jobcontract.EnvPoint)
	if point == "" {
		point = "-"
	}
	data := cfg.Data
	if cfg.Synthetic {
		data = "synthetic"
	}
	fmt.Fprintf(stderr, "synthtrain: point=%q preset=%s batch=%d workers=%d prefetch=%d gpu-step=%s max-iterations=%d data=%s cpus=%d control=%v\n",
		point, cfg.Preset.Name, cfg.Batch, cfg.Workers, cfg.Prefetch, cfg.GPUStep, cfg.MaxIterations, data, runtime.NumCPU(), cfg.Control != nil)
	ckDir := "-"
	if cfg.Checkpoint != nil {
		ckDir = cfg.Checkpoint.Dir
	}
	fmt.Fprintf(stderr, "synthtrain: checkpoint=%s requeue=%s\n", ckDir, mode)
	sum, err := Train(ctx, cfg, metrics)
	if sum.Resumed {
		fmt.Fprintf(stderr, "synthtrain: resumed at iteration %d from %s\n", sum.ResumedAt, checkpointPath(ckDir))
	}
	fmt.Fprintln(stderr, summaryLine(sum))
	if errors.Is(err, ErrPreempted) {
		<-stopped // the stop is written before preempt is closed
		return afterStop(ctx, err, getStop(), sum, ckDir, mode, getenv, stderr)
	}
	return err
}

// watchStops closes preempt at the first stop from stops (the loop sees it
// at the end of the iteration in progress); stopped is closed once it is
// read (or when done is closed first), and getStop returns it.
func watchStops(stops <-chan Stop, stderr io.Writer) (preempt, stopped <-chan struct{}, getStop func() Stop, done chan struct{}) {
	pre, st := make(chan struct{}), make(chan struct{})
	done = make(chan struct{})
	var stop Stop
	go func() {
		defer close(st)
		select {
		case stop = <-stops:
			fmt.Fprintf(stderr, "synthtrain: %s: stopping at the end of the iteration in progress\n", stop.Signal)
			close(pre)
		case <-done:
		}
	}()
	return pre, st, func() Stop { return stop }, done
}

// afterStop reports a run stopped at an iteration boundary and, for a stop
// that asks for it, asks Slurm to requeue the job (EnvRequeue's mode).
func afterStop(ctx context.Context, err error, stop Stop, sum Summary, ckDir, mode string, getenv func(string) string, stderr io.Writer) error {
	saved := "no checkpoint directory: this run's work is lost"
	if sum.Saved != "" {
		saved = fmt.Sprintf("checkpoint saved at iteration %d in %s", sum.ResumedAt+sum.Iterations, checkpointPath(ckDir))
	}
	fmt.Fprintf(stderr, "synthtrain: stopped by %s; %s\n", stop.Signal, saved)
	if !stop.Requeue || mode == RequeueNone {
		return err
	}
	if rerr := requeue(context.WithoutCancel(ctx), mode, slurmJobID(getenv)); rerr != nil {
		return fmt.Errorf("%w; requeue: %v", err, rerr)
	}
	fmt.Fprintf(stderr, "synthtrain: asked Slurm to %s job %s\n", map[string]string{RequeueSelf: "requeue", RequeueHeld: "requeue and hold"}[mode], slurmJobID(getenv))
	return err
}

func summaryLine(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "synthtrain: %d iterations, %d samples, %d epoch(s) in %.2fs: %.1f samples/s",
		s.Iterations, s.Samples, s.Epochs, s.Wall.Seconds(), s.SamplesPerS())
	if s.Files > 0 {
		fmt.Fprintf(&b, "; dataset %d files, %s", s.Files, units.FormatBytes(s.DatasetBytes))
	}
	if s.Iterations > 0 {
		n := time.Duration(s.Iterations)
		fmt.Fprintf(&b, "; mean data wait %s, step %s (asked %s)",
			(s.DataWait / n).Round(time.Microsecond), (s.Step / n).Round(time.Microsecond), (s.StepIntended / n).Round(time.Microsecond))
	}
	return b.String()
}
