package hostlock

import (
	"context"
	"math"

	"github.com/synergy-sched/synergy/runner"
)

// Pinned is a runner whose jobs run on a run's claimed cores: a job with no
// cpuset of its own gets the first ceil(cpus) of them (all of them with no
// CPU budget). With a Dataset, the dataset lock that LockedCache took to
// prepare a point is dropped once the point's job has ended, so another
// run's point can go between two of this run's.
type Pinned struct {
	runner.Runner
	Cores   *Cores
	Dataset *Dataset
}

// Start pins the job to the claimed cores, then starts it.
func (p Pinned) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	if job.Limits.CPUSet == nil {
		cpus := p.Cores.CPUs()
		if n := int(math.Ceil(job.Limits.CPUs)); job.Limits.CPUs > 0 && n < len(cpus) {
			cpus = cpus[:n]
		}
		job.Limits.CPUSet = cpus
	}
	h, err := p.Runner.Start(ctx, job)
	if p.Dataset == nil {
		return h, err
	}
	if err != nil {
		p.Dataset.Release()
		return h, err
	}
	return releasing{Handle: h, ds: p.Dataset}, nil
}

// releasing drops the dataset lock when its job has ended.
type releasing struct {
	runner.Handle
	ds *Dataset
}

func (r releasing) Wait() (runner.Result, error) {
	res, err := r.Handle.Wait()
	r.ds.Release()
	return res, err
}

// Unwrap is the runner underneath.
func (p Pinned) Unwrap() runner.Runner { return p.Runner }

// PageCache is the page-cache control a profile uses (profiler.Cache).
type PageCache interface {
	Evict(dir string) (files int, err error)
	Resident(dir string) (residentBytes, totalBytes int64, err error)
	Warm(dir string) error
}

// LockedCache takes the dataset lock before touching the cache: exclusive
// before an eviction (the cold point that follows runs under it), shared
// before warming. The lock is held until the next call or Release (Pinned
// releases it when the point's job ends), so it covers the point that the
// call prepared.
type LockedCache struct {
	PageCache
	Lock *Dataset
}

// Evict takes the lock exclusive, then evicts.
func (c LockedCache) Evict(dir string) (int, error) {
	if err := c.Lock.Exclusive(); err != nil {
		return 0, err
	}
	return c.PageCache.Evict(dir)
}

// Warm takes the lock shared, then warms.
func (c LockedCache) Warm(dir string) error {
	if err := c.Lock.Shared(); err != nil {
		return err
	}
	return c.PageCache.Warm(dir)
}
