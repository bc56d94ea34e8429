package sample

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Reserved keys of a timeline line; no series may use them.
const (
	KeyTime     = "time"      // RFC 3339 timestamp with nanoseconds
	KeyElapsedS = "elapsed_s" // seconds since the first record written
)

// JSONLWriter writes each Record as one flat JSON object on its own line:
//
//	{"time":"2025-01-02T03:04:05.1Z","elapsed_s":0.1,"cg_cpu_usage_s":1.5,...}
//
// Series keys follow in sorted order, so equal records give equal bytes.
// Each line goes to the underlying writer in one Write call, so a crash
// leaves whole lines behind.
type JSONLWriter struct {
	w     io.Writer
	buf   []byte
	keys  []string
	start time.Time
	begun bool
}

// NewJSONLWriter returns a writer of timeline lines to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter { return &JSONLWriter{w: w} }

// Write appends one line for r.
func (j *JSONLWriter) Write(r Record) error {
	if !j.begun {
		j.start, j.begun = r.Time, true
	}
	j.keys = j.keys[:0]
	for k := range r.Values {
		if k == KeyTime || k == KeyElapsedS {
			return fmt.Errorf("write timeline line: series name %q is reserved", k)
		}
		j.keys = append(j.keys, k)
	}
	sort.Strings(j.keys)
	b := append(j.buf[:0], `{"`+KeyTime+`":"`...)
	b = r.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","`+KeyElapsedS+`":`...)
	b = appendFloat(b, r.Time.Sub(j.start).Seconds())
	for _, k := range j.keys {
		v := r.Values[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue // Record.Set never stores these; a hand-made map might
		}
		b = append(b, ',')
		b = appendKey(b, k)
		b = append(b, ':')
		b = appendFloat(b, v)
	}
	b = append(b, '}', '\n')
	j.buf = b
	if _, err := j.w.Write(b); err != nil {
		return fmt.Errorf("write timeline line: %w", err)
	}
	return nil
}

// appendFloat formats v as encoding/json does: plain decimals between 1e-6
// and 1e21 (so byte counts stay integers), exponent form outside.
func appendFloat(b []byte, v float64) []byte {
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(b, v, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendKey appends k as a JSON string; plain names skip the encoder.
func appendKey(b []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			q, _ := json.Marshal(k) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"')
}

// Summary condenses one series. For a cumulative counter (cg_cpu_usage_s,
// cg_io_read_bytes) Delta and Rate are the meaningful figures; for a gauge
// (gpu0_util_pct, host_cpu_pct) Mean and Max are.
type Summary struct {
	Count               int
	First, Last         float64
	Min, Max, Mean      float64
	FirstTime, LastTime time.Time
}

// Delta is Last − First.
func (s Summary) Delta() float64 { return s.Last - s.First }

// RatePerS is Delta per second between the first and last samples, or 0 with
// fewer than two samples or no time between them.
func (s Summary) RatePerS() float64 {
	dt := s.LastTime.Sub(s.FirstTime).Seconds()
	if s.Count < 2 || dt <= 0 {
		return 0
	}
	return s.Delta() / dt
}

type acc struct {
	s   Summary
	sum float64
	pts []point // every sample, for SummaryBetween
}

type point struct {
	t time.Time
	v float64
}

// Aggregator is a Sink that keeps a Summary per series, and the samples
// themselves so that a part of the run can be summarised later
// (SummaryBetween). A point's samples at 10 Hz take 16 bytes each: 10
// minutes of 20 series are about 2 MB. It is safe to read while a loop
// writes to it.
type Aggregator struct {
	mu     sync.Mutex
	series map[string]*acc
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator { return &Aggregator{series: map[string]*acc{}} }

// Write folds r into the summaries. It never fails.
func (a *Aggregator) Write(r Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range r.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		x := a.series[k]
		if x == nil {
			x = &acc{s: Summary{First: v, Min: v, Max: v, FirstTime: r.Time}}
			a.series[k] = x
		}
		x.s.Count++
		x.sum += v
		x.s.Last, x.s.LastTime = v, r.Time
		x.s.Min = math.Min(x.s.Min, v)
		x.s.Max = math.Max(x.s.Max, v)
		x.s.Mean = x.sum / float64(x.s.Count)
		x.pts = append(x.pts, point{r.Time, v})
	}
	return nil
}

// SummaryBetween summarises one series over the samples taken from from
// to to (both included), and reports whether there was any.
func (a *Aggregator) SummaryBetween(name string, from, to time.Time) (Summary, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	x, ok := a.series[name]
	if !ok {
		return Summary{}, false
	}
	var s Summary
	var sum float64
	for _, p := range x.pts {
		if p.t.Before(from) || p.t.After(to) {
			continue
		}
		if s.Count == 0 {
			s = Summary{First: p.v, Min: p.v, Max: p.v, FirstTime: p.t}
		}
		s.Count++
		sum += p.v
		s.Last, s.LastTime = p.v, p.t
		s.Min, s.Max = math.Min(s.Min, p.v), math.Max(s.Max, p.v)
	}
	if s.Count == 0 {
		return Summary{}, false
	}
	s.Mean = sum / float64(s.Count)
	return s, true
}

// Summary returns the summary of one series and whether it was ever seen.
func (a *Aggregator) Summary(name string) (Summary, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	x, ok := a.series[name]
	if !ok {
		return Summary{}, false
	}
	return x.s, true
}

// Names returns every series seen, sorted.
func (a *Aggregator) Names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]string, 0, len(a.series))
	for k := range a.series {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
