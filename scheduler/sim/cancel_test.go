package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// bigGenerator is a 2-million-job workload arriving far faster than the
// cluster drains it: a run of it would take hours.
func bigGenerator(t *testing.T, seed uint64) Source {
	g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 10_000, NumJobs: 2_000_000, Split: [3]float64{20, 70, 10}, Seed: seed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func simConfig(t *testing.T) Config {
	s, err := scheduler.NewStrategy("tune")
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy("fifo")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Cluster: defaultCluster(t), Strategy: s, Policy: p, RoundSeconds: DefaultRoundSeconds,
		Window: simcore.All, FirstRoundAtZero: true}
}

// Cancelled at round 20, the run plays no further round and returns the
// context's error.
func TestRunContext_StopsAtTheNextRound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := simConfig(t)
	rounds, after := 0, 0
	cfg.OnRound = func(float64, *scheduler.Round, []*scheduler.Active) {
		rounds++
		if ctx.Err() != nil {
			after++
		}
		if rounds == 20 {
			cancel()
		}
	}
	res, err := RunContext(ctx, cfg, bigGenerator(t, 1))
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("res %v, err %v; want no result and context.Canceled", res, err)
	}
	if after != 0 {
		t.Errorf("%d rounds played after the cancellation, want 0", after)
	}
	if !strings.Contains(err.Error(), "stopped at round ") {
		t.Errorf("err %q does not say where it stopped", err)
	}
}

// A sweep cancelled during its second run returns the first run's result
// and the context's error; the runs not started never start.
func TestSweep_CancelledKeepsFinishedRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := simConfig(t)
	base.Window = simcore.Window{First: 0, Last: 9}
	points := Grid{Strategies: []string{"fair"}, Policies: []string{"fifo"}, Loads: []float64{9}, Seeds: []uint64{1, 2, 3, 4}}.Points()
	made := 0
	source := func(p simcore.Point) (Source, error) {
		made++
		if p.Seed == 1 { // small: finishes
			return NewCatalogGenerator(GeneratorConfig{JobsPerHour: 9, NumJobs: 10, Split: [3]float64{20, 70, 10}, Seed: 1}, nil)
		}
		cancel() // the second run is cut short
		return bigGenerator(t, p.Seed), nil
	}
	done := 0
	res, err := Sweep(ctx, base, points, 1, source, func(int, int, simcore.Point) { done++ })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res == nil || len(res.Runs) != 1 || res.Runs[0].Point.Seed != 1 || res.Runs[0].Result == nil {
		t.Fatalf("result %+v, want the first run only", res)
	}
	if made != 2 || done != 1 {
		t.Errorf("%d workloads made, %d runs reported done; want 2 and 1", made, done)
	}
	if !strings.Contains(err.Error(), "1 of 4 runs finished") {
		t.Errorf("err %q does not say how far the sweep got", err)
	}
}

// lineReader yields n trace rows, cancelling after cancelAt rows.
type lineReader struct {
	i, n, cancelAt int
	cancel         func()
	buf            []byte
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.i < r.n {
		if r.i == r.cancelAt {
			r.cancel()
		}
		r.buf = fmt.Appendf(r.buf, "%d,res18,%d,1000,1\n", r.i, r.i)
		r.i++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Reading a 2-million-row trace stops within traceCheckEvery rows of the
// cancellation.
func TestParseTraceContext_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &lineReader{n: 2_000_000, cancelAt: 100_000, cancel: cancel}
	_, err := ParseTraceContext(ctx, r, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r.i > 100_000+2*traceCheckEvery {
		t.Errorf("read %d rows, want to stop within %d of row 100000", r.i, 2*traceCheckEvery)
	}
}

func TestParseTrace_HeaderRow(t *testing.T) {
	jobs, err := ParseTraceContext(context.Background(), strings.NewReader("job_id,model,arrival_s,iterations,gpus\n0,res18,0,1000,1\n"), nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("a header row: %d jobs, %v; want it skipped", len(jobs), err)
	}
	for in, want := range map[string]string{
		"0,res18,0,1000,1\njob_id,model,arrival_s,iterations,gpus\n": `trace line 2: job_id "job_id" is not a non-negative integer`, // only the first row may be a header
		"id,model,0,1000,1\n": `trace line 1: job_id "id" is not a non-negative integer`, // words and numbers: a bad row
	} {
		if _, err := ParseTraceContext(context.Background(), strings.NewReader(in), nil); err == nil || err.Error() != want {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
}

func TestGeneratorConfig_Limits(t *testing.T) {
	for _, c := range []struct {
		cfg  GeneratorConfig
		want string
	}{
		{GeneratorConfig{JobsPerHour: 9, NumJobs: 1e9, Split: [3]float64{20, 70, 10}}, "num_jobs = 1000000000: above 10000000"},
		{GeneratorConfig{JobsPerHour: 1e6, Split: [3]float64{20, 70, 10}}, "jobs_per_hour = 1e+06: above 100000"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
}
