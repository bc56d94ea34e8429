package synthtrain

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// TrainConfig is one training run, as the flags describe it.
type TrainConfig struct {
	Preset Preset
	// Batch is samples per batch (--batch), Workers the loader goroutines
	// (--workers), Prefetch the bounded queue of batches (--prefetch).
	Batch, Workers, Prefetch int
	// PrefetchPerWorker, when > 0, makes the queue's bound follow a worker
	// count changed through the control channel (2 when --prefetch is not
	// given); 0 keeps Prefetch.
	PrefetchPerWorker int
	// MaxIterations stops the run with success after that many
	// iterations; 0 runs until the context is cancelled.
	MaxIterations int
	// GPUStep is the emulated GPU time of one batch (--gpu-step).
	GPUStep time.Duration
	// Data is the dataset directory (--data); unused when Synthetic.
	Data string
	// Synthetic feeds one pre-made batch over and over and reads no files
	// (--synthetic-data): the GPU step's ingestion rate.
	Synthetic bool
	Seed      uint64
	// CheckpointEvery is --checkpoint-every: the run's CheckpointConfig
	// takes it (0: on the preemption signal and at the end only).
	CheckpointEvery int
	// Control, when set, is the control channel the job listens to
	// between batches (from the environment, not a flag).
	Control *Control
	// Checkpoint, when set, saves the run's progress there and resumes
	// from it (checkpoint.go).
	Checkpoint *CheckpointConfig
	// Preempt, when it is closed, stops the run at the end of the
	// iteration in progress (after saving a checkpoint); Train then
	// returns ErrPreempted.
	Preempt <-chan struct{}

	// ck is the checkpoint state of the run, set by Train.
	ck *ckState
}

// ckState is a run's checkpoint bookkeeping.
type ckState struct {
	dir   string
	every int
	base  Checkpoint // the fields that must match, and the counts so far
	// perEpoch is batches per epoch (0: synthetic, one endless epoch).
	perEpoch  int
	nextBatch int
	samples   int64
}

// save writes the checkpoint for iters done.
func (c *ckState) save(reason string, iters int) error {
	k := c.base
	k.Iterations, k.NextBatch, k.Samples, k.Reason = iters, c.nextBatch, c.samples, reason
	if c.perEpoch > 0 {
		k.Epoch = c.nextBatch / c.perEpoch
	}
	k.Saves++
	k.TS = unixSeconds(time.Now())
	if err := saveCheckpoint(c.dir, k); err != nil {
		return err
	}
	c.base.Saves = k.Saves
	return nil
}

// Summary totals a run, for the human summary at exit.
type Summary struct {
	Iterations int
	Samples    int
	// Epochs is the highest epoch index seen plus one.
	Epochs int
	// Files and DatasetBytes describe the dataset (0 when synthetic).
	Files        int
	DatasetBytes int64
	Wall         time.Duration
	DataWait     time.Duration
	Step         time.Duration
	StepIntended time.Duration
	// ResumedAt is the iteration the run resumed at from its checkpoint
	// (0 for a fresh start); Iterations counts this run's only.
	ResumedAt int
	// Resumed is true when the run started from a checkpoint.
	Resumed bool
	// Saved is the last checkpoint saved ("" none): "signal", "periodic"
	// or "done".
	Saved string
}

// SamplesPerS is the run's throughput over its whole wall time.
func (s Summary) SamplesPerS() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Samples) / s.Wall.Seconds()
}

// batchSource is what the training loop takes batches from.
type batchSource interface {
	Next(ctx context.Context) (Batch, error)
	Release(b Batch)
	Close()
}

// Train runs the training loop: take a batch (the time blocked is
// data_wait_s), emulate the GPU step with a timed wait (a timer, which burns
// no CPU; step_s is the wait measured, step_intended_s the wait asked for),
// and append one Iteration to metrics (nil: none) in a single write per line.
// With cfg.Control it also reads control commands before each batch (from
// the first batch's hello on) and answers them (control.go). It returns
// when MaxIterations are done, or with ctx's error.
func Train(ctx context.Context, cfg TrainConfig, metrics io.Writer) (Summary, error) {
	var sum Summary
	start := time.Now()
	var (
		src batchSource
		k   knobs = noKnobs{}
	)
	if cfg.Synthetic {
		if err := startCheckpoint(&cfg, 0, &sum); err != nil {
			return sum, err
		}
		src = newSyntheticSource(cfg)
	} else {
		ds, err := ScanDataset(cfg.Data, cfg.Preset.Ext)
		if err != nil {
			return sum, fmt.Errorf("train: %w", err)
		}
		sum.Files, sum.DatasetBytes = len(ds.Files), ds.Bytes
		if err := startCheckpoint(&cfg, len(ds.Files), &sum); err != nil {
			return sum, err
		}
		if cfg.ck != nil && cfg.MaxIterations > 0 && sum.ResumedAt >= cfg.MaxIterations {
			sum.Wall = time.Since(start)
			return sum, nil // a finished run started again: nothing to do
		}
		l, err := StartLoader(ctx, LoaderConfig{
			Dataset: ds, Preset: cfg.Preset, Batch: cfg.Batch,
			Workers: cfg.Workers, Prefetch: cfg.Prefetch, PrefetchPerWorker: cfg.PrefetchPerWorker, Seed: cfg.Seed,
			Start: startBatch(cfg),
		})
		if err != nil {
			return sum, fmt.Errorf("train: %w", err)
		}
		src, k = l, loaderKnobs{l}
	}
	defer src.Close()
	var ctl *controller
	if cfg.Control != nil {
		ctl = newController(*cfg.Control, k)
	}
	err := loop(ctx, cfg, src, ctl, metrics, &sum)
	sum.Wall = time.Since(start)
	return sum, err
}

// startCheckpoint loads cfg's checkpoint, when it has a directory, and sets
// the run up to resume from it: cfg.ck, sum.ResumedAt. A checkpoint that
// does not match the run (another batch, seed, preset or dataset) is
// refused, naming what differs, rather than resumed at the wrong batch.
func startCheckpoint(cfg *TrainConfig, files int, sum *Summary) error {
	if cfg.Checkpoint == nil || cfg.Checkpoint.Dir == "" {
		return nil
	}
	if cfg.Checkpoint.Every < 0 {
		return fmt.Errorf("train: checkpoint every %d iterations: must be >= 0", cfg.Checkpoint.Every)
	}
	ck := &ckState{dir: cfg.Checkpoint.Dir, every: cfg.Checkpoint.Every, base: Checkpoint{
		Version: checkpointVersion, Job: "synthtrain",
		Preset: cfg.Preset.Name, Batch: cfg.Batch, Seed: cfg.Seed, Files: files, Synthetic: cfg.Synthetic,
	}}
	if !cfg.Synthetic {
		ck.perEpoch = (files + cfg.Batch - 1) / cfg.Batch
	}
	c, err := LoadCheckpoint(ck.dir)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if c != nil {
		if why := resumeCheck(c, *cfg, files); why != "" {
			return fmt.Errorf("train: checkpoint %s is of another run (%s): move it away to start afresh", checkpointPath(ck.dir), why)
		}
		ck.base.Saves, ck.base.Resumes = c.Saves, c.Resumes+1
		ck.nextBatch, ck.samples = c.NextBatch, c.Samples
		sum.ResumedAt, sum.Resumed = c.Iterations, true
	}
	cfg.ck = ck
	return nil
}

// startBatch is the loader's first batch index: the checkpoint's next.
func startBatch(cfg TrainConfig) int {
	if cfg.ck == nil {
		return 0
	}
	return cfg.ck.nextBatch
}

// stopAt saves the checkpoint (when there is one) for a run stopped before
// iteration i and returns ErrPreempted.
func stopAt(ck *ckState, i int, sum *Summary) error {
	if ck != nil {
		if err := ck.save("signal", i); err != nil {
			return fmt.Errorf("train: iteration %d: %w", i, err)
		}
		sum.Saved = "signal"
	}
	return ErrPreempted
}

// done counts iteration i's samples and saves the periodic checkpoint
// (nil ck: nothing to do).
func (c *ckState) done(i, samples int, sum *Summary) error {
	if c == nil {
		return nil
	}
	c.samples += int64(samples)
	if c.every > 0 && (i+1)%c.every == 0 {
		if err := c.save("periodic", i+1); err != nil {
			return fmt.Errorf("train: iteration %d: %w", i, err)
		}
		sum.Saved = "periodic"
	}
	return nil
}

// preempted reports whether ch is closed (nil: never).
func preempted(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// loop is the training loop over src, answering ctl (nil: no control
// channel); it adds to sum.
func loop(ctx context.Context, cfg TrainConfig, src batchSource, ctl *controller, metrics io.Writer, sum *Summary) error {
	var (
		line []byte
		// last is the batch delivered last: replay hands it again, so its
		// tensor goes back to the loader only when the next one arrives.
		last     Batch
		haveLast bool
	)
	ck := cfg.ck
	i := sum.ResumedAt
	for ; cfg.MaxIterations == 0 || i < cfg.MaxIterations; i++ {
		if preempted(cfg.Preempt) {
			return stopAt(ck, i, sum)
		}
		if ctl != nil {
			if err := ctl.poll(i); err != nil {
				return fmt.Errorf("train: iteration %d: %w", i, err)
			}
		}
		replayed := ctl != nil && ctl.replay
		t0 := time.Now()
		b := last
		if !replayed {
			var err error
			if b, err = src.Next(ctx); err != nil {
				return fmt.Errorf("train: iteration %d: wait for data: %w", i, err)
			}
			if haveLast {
				src.Release(last)
			}
			last, haveLast = b, true
			if ck != nil {
				ck.nextBatch = b.Index + 1
			}
		}
		t1 := time.Now()
		if ctl != nil {
			if err := ctl.delivered(b, replayed, t1, i); err != nil {
				return fmt.Errorf("train: iteration %d: %w", i, err)
			}
		}
		if err := sleepCtx(ctx, cfg.GPUStep); err != nil {
			return fmt.Errorf("train: iteration %d: gpu step: %w", i, err)
		}
		t2 := time.Now()

		epoch, intended := b.Epoch, cfg.GPUStep.Seconds()
		it := jobcontract.Iteration{
			Iter: i, Samples: b.Samples, Epoch: &epoch,
			DataWaitS: t1.Sub(t0).Seconds(), StepS: t2.Sub(t1).Seconds(),
			StepIntendedS: &intended, Emulated: true,
			TS: unixSeconds(t2),
		}
		if metrics != nil {
			line = jobcontract.AppendIteration(line[:0], it)
			if _, err := metrics.Write(line); err != nil {
				return fmt.Errorf("train: iteration %d: write metrics: %w", i, err)
			}
		}
		sum.Iterations++
		sum.Samples += b.Samples
		sum.Epochs = max(sum.Epochs, b.Epoch+1)
		sum.DataWait += t1.Sub(t0)
		sum.Step += t2.Sub(t1)
		sum.StepIntended += cfg.GPUStep
		if err := ck.done(i, b.Samples, sum); err != nil {
			return err
		}
	}
	if ck != nil {
		if err := ck.save("done", i); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		sum.Saved = "done"
	}
	return nil
}

// sleepCtx waits d on a timer, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// syntheticSource hands out one pre-made batch: no files, no decode.
type syntheticSource struct{ b Batch }

func newSyntheticSource(cfg TrainConfig) *syntheticSource {
	data := make([]float32, cfg.Batch*cfg.Preset.codec.tensorLen())
	r := newRNG(cfg.Seed, 30)
	for i := range data {
		data[i] = float32(r.float())
	}
	return &syntheticSource{b: Batch{Index: startBatch(cfg), Samples: cfg.Batch, Data: data}}
}

func (s *syntheticSource) Next(ctx context.Context) (Batch, error) {
	if err := ctx.Err(); err != nil {
		return Batch{}, err
	}
	b := s.b
	s.b.Index++
	return b, nil
}

func (s *syntheticSource) Release(Batch) {}
func (s *syntheticSource) Close()        {}
