package pool

import (
	"context"
	"sync"
)

// Run calls run(ctx, i) for every i in [0, n) on up to workers goroutines
// (at least one). The rules:
//
//   - A run that fails stops the sweep: runs not yet started are not
//     started, and those in flight see their context cancelled. The error
//     returned is that of the first run to fail (runs that fail after it,
//     stopped by that cancellation or not, are not reported).
//   - When ctx is done, runs not yet started are not started; Run returns
//     ctx's error, and finished says which runs completed.
//   - done, when set, is called serially after each run that succeeded,
//     with its index and how many have succeeded so far.
//
// finished[i] is true for every run that returned without error.
func Run(ctx context.Context, n, workers int, run func(ctx context.Context, i int) error, done func(i, count int)) (finished []bool, err error) {
	finished = make([]bool, n)
	errs := make([]error, n)
	inner, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu    sync.Mutex
		count int
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < max(1, min(workers, n)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if inner.Err() != nil {
					continue
				}
				err := run(inner, i)
				mu.Lock()
				if err != nil {
					if inner.Err() == nil {
						errs[i] = err
					}
					stop()
				} else {
					finished[i] = true
					count++
					if done != nil {
						done(i, count)
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-inner.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return finished, err
	}
	return finished, firstError(errs)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
