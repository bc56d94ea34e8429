package synthtrain

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
)

// Batch is one batch handed to the training loop.
type Batch struct {
	// Index counts batches from 0 across epochs.
	Index int
	// Epoch is the pass over the dataset the samples came from.
	Epoch int
	// Samples is the number of samples; the last batch of an epoch may be
	// short (drop_last=False).
	Samples int
	// Data holds Samples × the preset's per-sample tensor, channel-major.
	Data []float32
}

// LoaderConfig sets up a Loader.
type LoaderConfig struct {
	Dataset Dataset
	Preset  Preset
	// Batch is samples per batch, Workers the loader goroutines, Prefetch
	// the most finished-or-in-progress batches queued ahead of the
	// training loop. All must be >= 1.
	Batch, Workers, Prefetch int
	Seed                     uint64
}

// Loader reads, decodes and augments samples on Workers goroutines, each
// building whole batches as a PyTorch DataLoader worker does, and hands
// them to the training loop in order through a bounded queue. Every epoch
// visits every file once in a seeded shuffled order.
type Loader struct {
	cfg    LoaderConfig
	queue  chan chan loaded // futures, in batch order
	free   chan []float32   // batch tensors given back by the loop
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type loaded struct {
	b   Batch
	err error
}

type batchJob struct {
	b     Batch
	files []int
	out   chan loaded
}

// StartLoader starts the loader's goroutines; Close stops them.
func StartLoader(ctx context.Context, cfg LoaderConfig) (*Loader, error) {
	switch {
	case cfg.Batch < 1:
		return nil, fmt.Errorf("start loader: batch %d < 1", cfg.Batch)
	case cfg.Workers < 1:
		return nil, fmt.Errorf("start loader: workers %d < 1", cfg.Workers)
	case cfg.Prefetch < 1:
		return nil, fmt.Errorf("start loader: prefetch %d < 1", cfg.Prefetch)
	case len(cfg.Dataset.Files) == 0:
		return nil, fmt.Errorf("start loader: dataset %s is empty", cfg.Dataset.Root)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Loader{
		cfg:    cfg,
		queue:  make(chan chan loaded, cfg.Prefetch),
		free:   make(chan []float32, cfg.Prefetch+cfg.Workers+2),
		cancel: cancel,
	}
	jobs := make(chan batchJob)
	l.wg.Add(1 + cfg.Workers)
	go l.dispatch(ctx, jobs)
	for range cfg.Workers {
		go l.work(ctx, jobs)
	}
	return l, nil
}

// dispatch walks epochs and batches, queueing a future for each batch before
// handing it to a worker, so the queue bounds the batches in flight.
func (l *Loader) dispatch(ctx context.Context, jobs chan<- batchJob) {
	defer l.wg.Done()
	defer close(jobs)
	n := len(l.cfg.Dataset.Files)
	index := 0
	for epoch := 0; ; epoch++ {
		order := epochOrder(n, l.cfg.Seed, epoch)
		for start := 0; start < n; start += l.cfg.Batch {
			files := order[start:min(start+l.cfg.Batch, n)]
			job := batchJob{
				b:     Batch{Index: index, Epoch: epoch, Samples: len(files)},
				files: files,
				out:   make(chan loaded, 1),
			}
			select {
			case l.queue <- job.out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job:
			case <-ctx.Done():
				return
			}
			index++
		}
	}
}

func (l *Loader) work(ctx context.Context, jobs <-chan batchJob) {
	defer l.wg.Done()
	codec := l.cfg.Preset.codec
	per := codec.tensorLen()
	var buf []byte
	for job := range jobs {
		b := job.b
		b.Data = l.tensor(b.Samples * per)
		var err error
		for j, fi := range job.files {
			if ctx.Err() != nil {
				return
			}
			path := filepath.Join(l.cfg.Dataset.Root, l.cfg.Dataset.Files[fi])
			buf, err = readInto(path, buf)
			if err != nil {
				err = fmt.Errorf("read %s: %w", path, err)
				break
			}
			r := newRNG(l.cfg.Seed, 20, uint64(b.Epoch), uint64(fi))
			if err = codec.process(buf, &r, b.Data[j*per:(j+1)*per]); err != nil {
				err = fmt.Errorf("load %s: %w", path, err)
				break
			}
		}
		job.out <- loaded{b: b, err: err}
	}
}

// tensor takes a batch tensor from the free list, or allocates one.
func (l *Loader) tensor(n int) []float32 {
	select {
	case t := <-l.free:
		if cap(t) >= n {
			return t[:n]
		}
	default:
	}
	return make([]float32, n, l.cfg.Batch*l.cfg.Preset.codec.tensorLen())
}

// Next returns the next batch in order, blocking until it is ready.
func (l *Loader) Next(ctx context.Context) (Batch, error) {
	var fut chan loaded
	select {
	case fut = <-l.queue:
	case <-ctx.Done():
		return Batch{}, ctx.Err()
	}
	select {
	case r := <-fut:
		if r.err != nil {
			return Batch{}, fmt.Errorf("batch %d (epoch %d): %w", r.b.Index, r.b.Epoch, r.err)
		}
		return r.b, nil
	case <-ctx.Done():
		return Batch{}, ctx.Err()
	}
}

// Release gives a batch's tensor back for reuse once the step is done with
// it, as pinned-memory buffers are reused.
func (l *Loader) Release(b Batch) {
	select {
	case l.free <- b.Data:
	default:
	}
}

// Close stops the goroutines and waits for them (at most one sample each).
func (l *Loader) Close() {
	l.cancel()
	l.wg.Wait()
}
