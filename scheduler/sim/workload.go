package sim

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
)

// Source yields jobs in arrival order. The simulator asks for the next job
// only when the previous one has arrived, as the original does.
type Source interface {
	// Next returns the next job, or ok=false when there are no more.
	Next() (j *scheduler.Job, ok bool)
	// Describe says where the jobs come from, for the result file.
	Describe() string
}

// List is a fixed list of jobs, yielded in arrival order (ties in list
// order). Jobs is not changed.
type List struct {
	Jobs   []*scheduler.Job
	Name   string
	i      int
	sorted []*scheduler.Job
}

// Next implements Source.
func (l *List) Next() (*scheduler.Job, bool) {
	if l.sorted == nil {
		l.sorted = append([]*scheduler.Job{}, l.Jobs...)
		slices.SortStableFunc(l.sorted, func(a, b *scheduler.Job) int { return cmp.Compare(a.ArrivalSeconds, b.ArrivalSeconds) })
	}
	if l.i >= len(l.sorted) {
		return nil, false
	}
	l.i++
	return l.sorted[l.i-1], true
}

// Describe implements Source.
func (l *List) Describe() string { return l.Name }

// traceCheckEvery is how many rows ParseTraceContext reads between looks at
// its context.
const traceCheckEvery = 1 << 12

// ParseTraceContext reads Synergy's recorded trace CSV (no header), one job per
// line: job_id, model, arrival_seconds, total_iterations, gpus — e.g.
// "3,m5,1505,122162,1". Blank lines and lines starting with # are skipped.
// Errors name the line and the field. Jobs keep their file order; the
// simulator admits them by arrival time (ties in file order).
//
// Models are looked up in catalog (nil: the zoo alone). The original maps
// an unknown model name to alexnet silently; we refuse it.
//
// A first row whose job_id, arrival_seconds, total_iterations and gpus are
// all words, not numbers, is taken as a header and skipped
// ("job_id,model,arrival_s,iterations,gpus"); a row with a mix of words
// and numbers is an error naming the field. More than MaxJobs rows are
// refused. It stops at ctx, looked at every traceCheckEvery rows.
func ParseTraceContext(ctx context.Context, r io.Reader, catalog *scheduler.Catalog) ([]*scheduler.Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if catalog == nil {
		catalog = scheduler.NewCatalog(scheduler.Shape{})
	}
	var jobs []*scheduler.Job
	seen := map[int]int{}
	line := 0
	first := true // no row read yet: it may be a header
	for sc.Scan() {
		line++
		if line%traceCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("trace line %d: reading stopped: %w", line, err)
			}
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 5 {
			return nil, fmt.Errorf("trace line %d: %d fields, want 5 (job_id, model, arrival_seconds, total_iterations, gpus)", line, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if first && isHeader(f) {
			first = false
			continue
		}
		first = false
		if len(jobs) >= MaxJobs {
			return nil, fmt.Errorf("trace line %d: more than %d jobs (the limit of one simulation, sim.MaxJobs)", line, MaxJobs)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil || id < 0 {
			return nil, fmt.Errorf("trace line %d: job_id %q is not a non-negative integer", line, f[0])
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("trace line %d: job_id %d repeats line %d", line, id, prev)
		}
		seen[id] = line
		arr, err := strconv.ParseFloat(f[2], 64)
		if err != nil || math.IsNaN(arr) || math.IsInf(arr, 0) || arr < 0 || arr > 1e12 {
			return nil, fmt.Errorf("trace line %d: arrival_seconds %q is not a non-negative number", line, f[2])
		}
		iters, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || iters < 1 || iters > 1e15 {
			return nil, fmt.Errorf("trace line %d: total_iterations %q is not a positive integer", line, f[3])
		}
		gpus, err := strconv.Atoi(f[4])
		if err != nil || gpus < 1 || gpus > 1<<20 {
			return nil, fmt.Errorf("trace line %d: gpus %q is not a positive integer", line, f[4])
		}
		j, err := catalog.Job(id, f[1], arr, iters, gpus)
		if err != nil {
			return nil, fmt.Errorf("trace line %d: model: %w", line, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace line %d: %w", line+1, err)
	}
	if len(jobs) == 0 {
		return nil, errors.New("trace: no jobs")
	}
	return jobs, nil
}

// isHeader reports whether a row's numeric fields (job_id,
// arrival_seconds, total_iterations, gpus) are all words: a header row.
func isHeader(f []string) bool {
	for _, i := range []int{0, 2, 3, 4} {
		if _, err := strconv.ParseFloat(f[i], 64); err == nil || f[i] == "" {
			return false
		}
	}
	return true
}

// LoadTraceContext reads a trace CSV file (catalog as in
// ParseTraceContext), stopped by ctx.
func LoadTraceContext(ctx context.Context, path string, catalog *scheduler.Catalog) ([]*scheduler.Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	jobs, err := ParseTraceContext(ctx, bufio.NewReaderSize(f, 1<<20), catalog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// WriteTrace writes jobs in the trace CSV format (Synergy's --record_trace).
func WriteTrace(w io.Writer, jobs []*scheduler.Job) error {
	bw := bufio.NewWriter(w)
	for _, j := range jobs {
		if _, err := fmt.Fprintf(bw, "%d,%s,%s,%d,%d\n", j.ID, j.Model, strconv.FormatFloat(j.ArrivalSeconds, 'f', -1, 64), j.Iterations, j.GPUs); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}
