package profiler

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/jobcontract"
)

func TestEstimate_BatchMeans(t *testing.T) {
	// 41 iterations of 10 samples, 0.1 s each: 100 samples/s exactly, no
	// spread between batches, so the interval is 0.
	var its []jobcontract.Iteration
	for i := 0; i <= 40; i++ {
		its = append(its, jobcontract.Iteration{Iter: i, Samples: 10, TS: 100 + 0.1*float64(i)})
	}
	e := estimate(its)
	if math.Abs(e.SamplesPerS-100) > 1e-9 || e.HalfWidth > 1e-9 || e.Batches != 10 || e.Iterations != 40 {
		t.Fatalf("estimate = %+v, want 100 samples/s, half-width 0, 10 batches, 40 iterations", e)
	}
	// Alternate batches at 0.1 s and 0.2 s per iteration: batch rates 100
	// and 50; with 10 batches of 4 the t interval is
	// t(0.975, 9) × sd / sqrt(10) = 2.262 × 26.35 / 3.162 = 18.85.
	its = its[:1]
	ts := 100.0
	for b := 0; b < 10; b++ {
		d := 0.1
		if b%2 == 1 {
			d = 0.2
		}
		for k := 0; k < 4; k++ {
			ts += d
			its = append(its, jobcontract.Iteration{Iter: len(its), Samples: 10, TS: ts})
		}
	}
	e = estimate(its)
	if math.Abs(e.HalfWidth-18.85) > 0.05 {
		t.Errorf("half-width = %.3f, want 18.85", e.HalfWidth)
	}
	// total samples over total time: 400 / 6 = 66.67
	if math.Abs(e.SamplesPerS-400.0/6) > 1e-9 {
		t.Errorf("samples/s = %v, want 66.67", e.SamplesPerS)
	}
	if short := estimate(its[:10]); short.Batches != 0 || !math.IsInf(short.RelHalfWidth(), 1) {
		t.Errorf("9 durations give no interval to stop on, got %+v", short)
	}
	// ...but the recorded half-width is not 0: 9 iterations alternate at
	// 100 and 50 samples/s (4 of each, then 100): sd 26.35 → t(8) × sd / 3 =
	// 2.306 × 26.35 / 3 = 20.25.
	if short := estimate(its[:10]); math.Abs(short.HalfWidth-20.25) > 0.05 {
		t.Errorf("short run half-width = %.3f, want 20.25", short.HalfWidth)
	}
	if two := estimate(its[:3]); two.HalfWidth != two.SamplesPerS {
		t.Errorf("2 iterations: half-width %v, want the whole estimate %v (spread unknown)", two.HalfWidth, two.SamplesPerS)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{4, 1, 3, 2, 5}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {50, 3}, {100, 5}, {95, 4.8}} {
		if got := percentile(xs, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestAxes(t *testing.T) {
	if got := CPUAxis(12); len(got) != 5 || got[4] != 12 || got[3] != 8 {
		t.Errorf("CPUAxis(12) = %v, want [1 2 4 8 12]", got)
	}
	if got := MemAxis(8 << 30); len(got) != 4 || got[0] != 1<<30 || got[3] != 8<<30 {
		t.Errorf("MemAxis(8GiB) = %v", got)
	}
	if Workers(0.5, 1) != 1 || Workers(3, 2) != 2 || Workers(4, 1) != 4 {
		t.Error("Workers = max(1, ceil(cpus/gpus))")
	}
}

// A script that validates and checkpoints for 2 s after each pass of 20
// iterations of 0.1 s (32 samples each): the rate is the in-pass one,
// whatever number of boundaries the run crosses, and the boundaries'
// extra time is reported apart.
func TestEstimate_TimeBetweenPassesIsNotThroughput(t *testing.T) {
	var iters []jobcontract.Iteration
	ts := 100.0
	for epoch := 0; epoch < 4; epoch++ {
		e := epoch
		for i := 0; i < 20; i++ {
			if i == 0 && epoch > 0 {
				ts += 2 // validation and a checkpoint before the pass's first batch
			}
			ts += 0.1
			iters = append(iters, jobcontract.Iteration{Iter: len(iters), Samples: 32, TS: ts, Epoch: &e})
		}
	}
	const inPass = 320.0 // samples/s
	for _, from := range []int{0, 5, 15} {
		est := estimate(iters[from:])
		if math.Abs(est.SamplesPerS-inPass)/inPass > 0.02 {
			t.Errorf("from iteration %d: %.1f samples/s, want the in-pass %.0f within 2%%", from, est.SamplesPerS, inPass)
		}
		if est.PassBoundaries != 3 || math.Abs(est.EpochOverheadS-2) > 0.01 {
			t.Errorf("from iteration %d: %d boundaries, %.3f s overhead each; want 3 and 2 s", from, est.PassBoundaries, est.EpochOverheadS)
		}
		if est.Batches < 2 || est.RelHalfWidth() > 0.01 {
			t.Errorf("from iteration %d: interval %+v; steady iterations should give a tight one", from, est)
		}
	}
	// Without epochs the boundaries cannot be told apart: the wall rate.
	for i := range iters {
		iters[i].Epoch = nil
	}
	if est := estimate(iters); est.PassBoundaries != 0 || est.SamplesPerS > 0.95*inPass {
		t.Errorf("no epochs reported: %+v; want the wall rate with no boundary", est)
	}
}

// A point's log keeps at most its cap and says it dropped the rest; the
// tail buffer never holds more than its size, even from one huge write.
func TestPointLogAndTailAreBounded(t *testing.T) {
	var b bytes.Buffer
	c := &cappedWriter{w: &b, left: 10}
	for _, s := range []string{"12345", "678901234", "more"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it taken", s, n, err)
		}
	}
	if got := b.String(); !strings.HasPrefix(got, "1234567890\n[synergy: this log stops at") || strings.Count(got, "[synergy") != 1 {
		t.Errorf("log = %q, want 10 bytes then one note", got)
	}
	tb := &tailBuffer{max: 8}
	tb.Write(bytes.Repeat([]byte("x"), 1<<20))
	tb.Write([]byte("\nlast"))
	if len(tb.buf) > 8 || tb.lastLine() != `"last"` { // quoted: it reaches the terminal
		t.Errorf("tail holds %d bytes, last line %q", len(tb.buf), tb.lastLine())
	}
}

func TestCappedWriter_NoNoteWhenNothingDropped(t *testing.T) {
	var b bytes.Buffer
	c := &cappedWriter{w: &b, left: 4}
	c.Write([]byte("abcd"))
	if b.String() != "abcd" {
		t.Errorf("log = %q: a note though nothing was dropped", b.String())
	}
}

// What a launch holds of its job's stream is bounded, however much the
// job writes: past maxHeldIterations, what came before the point goes;
// a point that alone reaches it stops there.
func TestLaunch_HoldIsBounded(t *testing.T) {
	l := &launch{run: &pointRun{}}
	batch := make([]jobcontract.Iteration, 40_000)
	ts := 1.7e9
	next := func() []jobcontract.Iteration {
		for i := range batch {
			ts += 0.001
			batch[i] = jobcontract.Iteration{Iter: i, TS: ts}
		}
		return batch
	}
	for range 3_000_000 / len(batch) { // 3 million lines
		l.hold(next())
		if len(l.run.m.all) > maxHeldIterations {
			t.Fatalf("holding %d iterations, above %d", len(l.run.m.all), maxHeldIterations)
		}
	}
	if !l.full || l.run.m.all[0].TS != 1.7e9+0.001 {
		t.Fatalf("full %v, first ts %v: want the launch's first point stopped, its start kept", l.full, l.run.m.all[0].TS)
	}
	// The next point (in place, from ts) frees what came before it.
	from := ts
	l.from, l.full = from, false
	l.hold(next())
	all := l.run.m.all
	if l.full || len(all) != len(batch)+1 || all[0].TS >= from || all[1].TS <= from {
		t.Errorf("after a move: %d held (full %v), want the last iteration before the point and its %d", len(all), l.full, len(batch))
	}
}

// BenchmarkHoldAFlood is a launch reading a job's flood of 3 million
// metrics lines (written before the first poll) through its tailer into
// its hold, as the sweep does each poll. Run under /usr/bin/time -v it
// gives the profiler's peak memory for such a job (docs/security.md).
func BenchmarkHoldAFlood(b *testing.B) {
	path := filepath.Join(b.TempDir(), "metrics.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	epoch := 0
	for i := range 3_000_000 {
		buf = jobcontract.AppendIteration(buf, jobcontract.Iteration{Iter: i, Samples: 8, StepS: 0.001, TS: 1.7e9 + float64(i)*1e-3, Epoch: &epoch})
		if len(buf) > 1<<20 {
			f.Write(buf)
			buf = buf[:0]
		}
	}
	f.Write(buf)
	f.Close()
	b.ResetTimer()
	for range b.N {
		l := &launch{run: &pointRun{tailer: jobcontract.NewTailer(path)}}
		read := 0
		for {
			its, err := l.run.tailer.Poll()
			if err != nil {
				b.Fatal(err)
			}
			if len(its) == 0 {
				break
			}
			read += len(its)
			l.hold(its)
		}
		if read != 3_000_000 || len(l.run.m.all) != maxHeldIterations || !l.full {
			b.Fatalf("read %d, held %d (full %v)", read, len(l.run.m.all), l.full)
		}
	}
}
