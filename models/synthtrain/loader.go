package synthtrain

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// MaxWorkers bounds the loader's worker goroutines (--workers and a
// control channel's "workers").
const MaxWorkers = 1024

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

	// gen is the worker set that built the batch: 0 for the first, +1 at
	// every SetWorkers that changed the count.
	gen int
}

// LoaderConfig sets up a Loader.
type LoaderConfig struct {
	Dataset Dataset
	Preset  Preset
	// Batch is samples per batch, Workers the loader goroutines, Prefetch
	// the most finished-or-in-progress batches queued ahead of the
	// training loop. All must be >= 1.
	Batch, Workers, Prefetch int
	// PrefetchPerWorker, when > 0, makes the queue's bound follow the
	// worker count (PyTorch's prefetch_factor): PrefetchPerWorker × workers
	// after every SetWorkers. 0 keeps Prefetch whatever the count.
	PrefetchPerWorker int
	Seed              uint64
	// Start is the index of the first batch to hand out (0: the first
	// batch of epoch 0); a resumed run starts where its checkpoint says,
	// in the same seeded order it would have reached without a stop.
	Start int
}

// Loader reads, decodes and augments samples on Workers goroutines, each
// building whole batches as a PyTorch DataLoader worker does, and hands
// them to the training loop in order through a bounded queue. Every epoch
// visits every file once in a seeded shuffled order.
//
// One dispatcher walks the epochs' batches in order; for each it queues a
// future (so the queue bounds the batches in flight and fixes their order)
// and hands the batch to whichever worker is free. SetWorkers replaces the
// worker set in the running pass: the old workers finish the batch they
// hold and exit, new ones take the next batch the dispatcher hands out, so
// no batch is lost, built twice or reordered, and prefetched batches stay
// queued.
type Loader struct {
	cfg    LoaderConfig
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool // unregisters the wake-up on ctx's end
	jobs   chan batchJob
	queue  chan chan loaded // futures, in batch order
	free   chan []float32   // batch tensors given back by the loop
	wg     sync.WaitGroup
	// running counts worker goroutines that have not exited.
	running atomic.Int32

	mu   sync.Mutex
	room *sync.Cond // the dispatcher waits on it while the queue is full
	// queued is the futures in queue, prefetch their bound.
	queued, prefetch int
	workers, gen     int
	quit             chan struct{} // closed to retire the current worker set
	closed           bool
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
	prefetch := cfg.Prefetch
	if cfg.PrefetchPerWorker > 0 {
		prefetch = cfg.PrefetchPerWorker * cfg.Workers
	}
	switch {
	case cfg.Batch < 1:
		return nil, fmt.Errorf("start loader: batch %d < 1", cfg.Batch)
	case cfg.Workers < 1 || cfg.Workers > MaxWorkers:
		return nil, fmt.Errorf("start loader: workers %d not in [1, %d]", cfg.Workers, MaxWorkers)
	case prefetch < 1:
		return nil, fmt.Errorf("start loader: prefetch %d < 1", prefetch)
	case len(cfg.Dataset.Files) == 0:
		return nil, fmt.Errorf("start loader: dataset %s is empty", cfg.Dataset.Root)
	case cfg.Start < 0:
		return nil, fmt.Errorf("start loader: start batch %d < 0", cfg.Start)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Loader{
		cfg:      cfg,
		ctx:      ctx,
		cancel:   cancel,
		jobs:     make(chan batchJob),
		queue:    make(chan chan loaded, max(prefetch, cfg.PrefetchPerWorker*MaxWorkers)),
		free:     make(chan []float32, prefetch+cfg.Workers+2),
		prefetch: prefetch,
		quit:     make(chan struct{}),
	}
	l.room = sync.NewCond(&l.mu)
	l.stop = context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.room.Broadcast()
		l.mu.Unlock()
	})
	l.wg.Add(1)
	go l.dispatch(ctx)
	l.startWorkers(cfg.Workers, 0, l.quit)
	l.workers = cfg.Workers
	return l, nil
}

func (l *Loader) startWorkers(n, gen int, quit <-chan struct{}) {
	l.wg.Add(n)
	l.running.Add(int32(n))
	for range n {
		go l.work(l.ctx, gen, quit)
	}
}

// Workers returns the worker count in force (the last SetWorkers').
func (l *Loader) Workers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.workers
}

// SetWorkers replaces the worker set with n new workers, from the batch
// after the last one handed to a worker; the old workers finish the batch
// each holds and exit. With PrefetchPerWorker the queue's bound follows.
// It returns the new set's generation: batches it builds carry it (the
// same count keeps the set and its generation). Call it from the
// goroutine that calls Close.
func (l *Loader) SetWorkers(n int) (gen int, err error) {
	if n < 1 || n > MaxWorkers {
		return 0, fmt.Errorf("workers %d not in [1, %d]", n, MaxWorkers)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("loader closed")
	}
	if n == l.workers {
		return l.gen, nil
	}
	close(l.quit)
	l.quit = make(chan struct{})
	l.gen++
	l.workers = n
	if l.cfg.PrefetchPerWorker > 0 {
		l.prefetch = l.cfg.PrefetchPerWorker * n
		l.room.Broadcast()
	}
	l.startWorkers(n, l.gen, l.quit)
	return l.gen, nil
}

// dispatch walks epochs and batches, queueing a future for each batch
// before handing it to a worker, so the queue bounds the batches in flight.
func (l *Loader) dispatch(ctx context.Context) {
	defer l.wg.Done()
	n := len(l.cfg.Dataset.Files)
	perEpoch := (n + l.cfg.Batch - 1) / l.cfg.Batch
	index := l.cfg.Start
	for epoch := index / perEpoch; ; epoch++ {
		order := epochOrder(n, l.cfg.Seed, epoch)
		first := 0
		if epoch == l.cfg.Start/perEpoch {
			first = (l.cfg.Start % perEpoch) * l.cfg.Batch
		}
		for start := first; start < n; start += l.cfg.Batch {
			files := order[start:min(start+l.cfg.Batch, n)]
			job := batchJob{
				b:     Batch{Index: index, Epoch: epoch, Samples: len(files)},
				files: files,
				out:   make(chan loaded, 1),
			}
			if !l.waitRoom(ctx) {
				return
			}
			// Never blocks: queued <= prefetch <= the channel's capacity.
			l.queue <- job.out
			select {
			case l.jobs <- job:
			case <-ctx.Done():
				return
			}
			index++
		}
	}
}

// waitRoom waits until the queue holds fewer than prefetch futures and
// counts one more; false when ctx ended.
func (l *Loader) waitRoom(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.queued >= l.prefetch && ctx.Err() == nil {
		l.room.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	l.queued++
	return true
}

func (l *Loader) work(ctx context.Context, gen int, quit <-chan struct{}) {
	defer l.wg.Done()
	defer l.running.Add(-1)
	codec := l.cfg.Preset.codec
	per := codec.tensorLen()
	var buf []byte
	for {
		// A retired worker takes no new batch, even when one is ready.
		select {
		case <-quit:
			return
		default:
		}
		var job batchJob
		select {
		case <-quit:
			return
		case <-ctx.Done():
			return
		case job = <-l.jobs:
		}
		b := job.b
		b.gen = gen
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
	l.mu.Lock()
	l.queued--
	l.room.Broadcast()
	l.mu.Unlock()
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
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.stop()
	l.wg.Wait()
}
