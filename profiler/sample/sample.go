package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// DefaultInterval is the sampling period when none is given: 10 Hz.
const DefaultInterval = 100 * time.Millisecond

// MaxDistinctErrors caps the distinct error messages kept per sampler; later
// new messages are only counted.
const MaxDistinctErrors = 8

// Sampler reads one source (NVML, the host, a cgroup) once per tick.
type Sampler interface {
	// Name labels the sampler in Health and the profile ("nvml", "host",
	// "cgroup"); names are unique within a Loop.
	Name() string
	// Sample adds this tick's values to out with out.Set. Values it cannot
	// read this time are simply not set: "no data" is not an error. An
	// error means the source failed; it is recorded and the tick goes on.
	Sample(now time.Time, out *Record) error
}

// Record is one timestamped row of named values. Names carry units
// ("gpu0_power_w", "cg_mem_cache_bytes").
type Record struct {
	Time   time.Time
	Values map[string]float64
}

// Set stores v under name. A NaN or infinite value is "no data" and is not
// stored, so every value in a Record is a finite number.
func (r *Record) Set(name string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if r.Values == nil {
		r.Values = make(map[string]float64)
	}
	r.Values[name] = v
}

// Get returns the value under name and whether it is there.
func (r Record) Get(name string) (float64, bool) {
	v, ok := r.Values[name]
	return v, ok
}

// Names returns the record's series names, sorted.
func (r Record) Names() []string {
	names := make([]string, 0, len(r.Values))
	for k := range r.Values {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Sink receives every Record the loop makes, in time order, from one
// goroutine at a time.
type Sink interface {
	Write(r Record) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(r Record) error

// Write calls f(r).
func (f SinkFunc) Write(r Record) error { return f(r) }

// Tee returns a Sink that writes each Record to every sink in order; one
// failing sink does not stop the others, and the errors are joined.
func Tee(sinks ...Sink) Sink {
	return SinkFunc(func(r Record) error {
		var errs []error
		for _, s := range sinks {
			if err := s.Write(r); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// Health is one sampler's (or the sink's) record over a run. Name, Samples
// and Errors map one to one onto sensitivity.SamplerRun.
type Health struct {
	Name string
	// Samples counts the Sample calls that returned no error.
	Samples int
	// Failures counts the calls that returned an error (or panicked).
	Failures int
	// Errors are the distinct messages in first-seen order, each with
	// " (xN)" when it came N>1 times; at most MaxDistinctErrors, then one
	// line "+K more distinct errors".
	Errors []string
	// Spent is the total time spent inside Sample (or Write, for the sink).
	Spent time.Duration
}

// tally accumulates one Health while the loop runs.
type tally struct {
	name     string
	samples  int
	failures int
	spent    time.Duration
	order    []string
	counts   map[string]int
	dropped  int // distinct messages past the cap
}

func (t *tally) ok(d time.Duration) {
	t.samples++
	t.spent += d
}

func (t *tally) fail(err error, d time.Duration) {
	t.failures++
	t.spent += d
	msg := err.Error()
	if _, seen := t.counts[msg]; seen {
		t.counts[msg]++
		return
	}
	if len(t.order) >= MaxDistinctErrors {
		t.dropped++
		return
	}
	if t.counts == nil {
		t.counts = make(map[string]int)
	}
	t.order = append(t.order, msg)
	t.counts[msg] = 1
}

func (t *tally) health() Health {
	h := Health{Name: t.name, Samples: t.samples, Failures: t.failures, Spent: t.spent}
	for _, msg := range t.order {
		if n := t.counts[msg]; n > 1 {
			msg = fmt.Sprintf("%s (x%d)", msg, n)
		}
		h.Errors = append(h.Errors, msg)
	}
	if t.dropped > 0 {
		h.Errors = append(h.Errors, fmt.Sprintf("+%d more distinct errors", t.dropped))
	}
	return h
}

// Loop drives samplers from one ticker and hands each tick's Record to a
// sink. Health may be read while Run is going.
type Loop struct {
	interval time.Duration
	samplers []Sampler
	sink     Sink

	mu      sync.Mutex
	tallies []tally
	sinkT   tally
	width   int // values in the last record, to size the next map
}

// NewLoop returns a loop that samples every interval (DefaultInterval if
// interval <= 0) and writes to sink (nil discards). Sampler names must be
// non-empty and unique.
func NewLoop(interval time.Duration, sink Sink, samplers ...Sampler) (*Loop, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	l := &Loop{interval: interval, samplers: samplers, sink: sink, sinkT: tally{name: "sink"}}
	seen := map[string]bool{}
	for i, s := range samplers {
		if s == nil {
			return nil, fmt.Errorf("new sampling loop: sampler %d is nil", i)
		}
		name := s.Name()
		if name == "" {
			return nil, fmt.Errorf("new sampling loop: sampler %d (%T) has an empty name", i, s)
		}
		if seen[name] {
			return nil, fmt.Errorf("new sampling loop: two samplers are named %q", name)
		}
		seen[name] = true
		l.tallies = append(l.tallies, tally{name: name})
	}
	return l, nil
}

// Run samples once at once and then at every tick until ctx is done; it
// returns nil when ctx ends it (errors of samplers are in Health, not here).
func (l *Loop) Run(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	tk := time.NewTicker(l.interval)
	defer tk.Stop()
	l.Tick(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tk.C:
			if ctx.Err() != nil {
				return nil
			}
			l.Tick(now)
		}
	}
}

// Tick runs every sampler once for the instant now, writes the Record to the
// sink and returns it. Run calls it; tests and benchmarks may call it
// directly with a virtual clock.
func (l *Loop) Tick(now time.Time) Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := Record{Time: now, Values: make(map[string]float64, l.width)}
	for i, s := range l.samplers {
		start := time.Now()
		err := safeSample(s, now, &rec)
		d := time.Since(start)
		if err != nil {
			l.tallies[i].fail(err, d)
		} else {
			l.tallies[i].ok(d)
		}
	}
	l.width = len(rec.Values)
	if l.sink != nil {
		start := time.Now()
		err := l.sink.Write(rec)
		d := time.Since(start)
		if err != nil {
			l.sinkT.fail(fmt.Errorf("write sample record: %w", err), d)
		} else {
			l.sinkT.ok(d)
		}
	}
	return rec
}

// safeSample turns a sampler's panic into an error so that it cannot take
// the other samplers (or the profiler) down with it.
func safeSample(s Sampler, now time.Time, rec *Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return s.Sample(now, rec)
}

// Health returns each sampler's health, in the order the samplers were given.
func (l *Loop) Health() []Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Health, len(l.tallies))
	for i := range l.tallies {
		out[i] = l.tallies[i].health()
	}
	return out
}

// SinkHealth returns the sink's record: Samples counts successful writes.
func (l *Loop) SinkHealth() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sinkT.health()
}
