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

// Start pins the job to the claimed cores, then starts it. The handle
// keeps the job's runner.Updater, if it has one, and an update is pinned
// to the claimed cores as Start's limits are.
func (p Pinned) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	job.Limits = p.pin(job.Limits)
	h, err := p.Runner.Start(ctx, job)
	if err != nil {
		if p.Dataset != nil {
			p.Dataset.Release()
		}
		return h, err
	}
	u := runner.AsUpdater(h)
	if p.Dataset != nil {
		h = releasing{Handle: h, ds: p.Dataset}
	}
	if u != nil {
		return updating{Handle: h, u: u, p: p}, nil
	}
	return h, nil
}

// pin gives limits with no cpuset of their own the first ceil(cpus) of the
// claimed cores (all of them with no CPU budget).
func (p Pinned) pin(l runner.Limits) runner.Limits {
	if l.CPUSet == nil {
		cpus := p.Cores.CPUs()
		if n := int(math.Ceil(l.CPUs)); l.CPUs > 0 && n < len(cpus) {
			cpus = cpus[:n]
		}
		l.CPUSet = cpus
	}
	return l
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

// updating is a pinned handle whose job's limits can change while it runs.
type updating struct {
	runner.Handle
	u runner.Updater
	p Pinned
}

// Update pins l to the claimed cores, then changes the running job's limits.
func (h updating) Update(ctx context.Context, l runner.Limits) error {
	return h.u.Update(ctx, h.p.pin(l))
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
