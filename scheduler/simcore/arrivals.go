package simcore

import "context"

// Arrivals is a workload's jobs in arrival order, read one ahead: the next
// job, and so the time an idle clock jumps to, is known before it arrives.
// Both engines take their jobs through it (Synergy's sources, Gavel's traces
// and generator).
type Arrivals[J any] struct {
	read func() (J, bool, error) // the source's next job; false at its end
	at   func(J) float64         // a job's arrival time, seconds
	next J
	has  bool
}

// arrivalCheckEvery is how often, in jobs, Due looks at its context: a
// trace may bring millions of jobs at one time.
const arrivalCheckEvery = 1 << 12

// NewArrivals reads the first job of read; at gives a job's arrival time.
func NewArrivals[J any](read func() (J, bool, error), at func(J) float64) (*Arrivals[J], error) {
	a := &Arrivals[J]{read: read, at: at}
	return a, a.fetch()
}

func (a *Arrivals[J]) fetch() error {
	j, ok, err := a.read()
	if err != nil {
		return err
	}
	a.next, a.has = j, ok
	return nil
}

// Next is the next job to arrive; false once the workload has ended.
func (a *Arrivals[J]) Next() (J, bool) { return a.next, a.has }

// Due hands add every job arriving by now (arrival <= now), in order,
// reading the one after each. It looks at ctx every 4,096 jobs and returns
// its error, or the first error of add or of the source.
func (a *Arrivals[J]) Due(ctx context.Context, now float64, add func(J) error) error {
	for n := 1; a.has && a.at(a.next) <= now; n++ {
		if n%arrivalCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := add(a.next); err != nil {
			return err
		}
		if err := a.fetch(); err != nil {
			return err
		}
	}
	return nil
}
