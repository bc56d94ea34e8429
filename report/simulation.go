package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Size of every simulation figure.
const (
	SimWidth  = 16 * vg.Centimeter
	SimHeight = 10 * vg.Centimeter
)

// JCTSeries is one line of a JCT CDF: a label and job completion times in
// hours.
type JCTSeries struct {
	Label    string
	JCTHours []float64
}

// SimOptions adjust a simulation figure.
type SimOptions struct {
	Title string
	// LinearX draws hours on a linear axis; the default is log scale
	// (JCTs span minutes to weeks).
	LinearX bool
}

// SeriesFromRuns makes one JCT series per run of a sweep, either engine's,
// from the window's jobs that finished (a job Gavel's rules dropped has no
// JCT and is left out, as in Gavel's mean). Labels name the policy, with
// Synergy's strategy first when the run has one ("tune+fifo"), plus the
// load and seed when those vary across the sweep.
func SeriesFromRuns(runs []simcore.Run) []JCTSeries {
	labels := runLabels(runs)
	var out []JCTSeries
	for i, r := range runs {
		out = append(out, JCTSeries{Label: labels[i], JCTHours: windowJCTHours(r.Result)})
	}
	return out
}

// runLabels names each run of a sweep: the policy, with Synergy's strategy
// first when the run has one ("tune+fifo"), plus the load and seed when
// those vary across the sweep.
func runLabels(runs []simcore.Run) []string {
	l := newLabeller(runs)
	out := make([]string, len(runs))
	for i, r := range runs {
		name := r.Point.Policy
		if r.Point.Strategy != "" {
			name = r.Point.Strategy + "+" + name
		}
		out[i] = l.label(name, r.Point.JobsPerHour, r.Point.Seed)
	}
	return out
}

// windowJCTHours is the JCTs in hours of a result's window's jobs that
// finished (none for a nil result).
func windowJCTHours(r *simcore.Result) []float64 {
	var out []float64
	if r == nil {
		return nil
	}
	for _, j := range r.Jobs {
		if j.JCTS != nil && (r.Window == nil || r.Window.Has(j.ID)) {
			out = append(out, *j.JCTS/3600)
		}
	}
	return out
}

// labeller names a sweep's runs: the load and the seed join a run's label
// only when they vary across the sweep.
type labeller struct {
	loads map[float64]bool
	seeds map[uint64]bool
}

// newLabeller is the labeller of runs' sweep.
func newLabeller(runs []simcore.Run) labeller {
	l := labeller{loads: map[float64]bool{}, seeds: map[uint64]bool{}}
	for _, r := range runs {
		l.loads[r.Point.JobsPerHour], l.seeds[r.Point.Seed] = true, true
	}
	return l
}

func (l *labeller) label(base string, load float64, seed uint64) string {
	if len(l.loads) > 1 {
		base += fmt.Sprintf(" %g jobs/h", load)
	}
	if len(l.seeds) > 1 {
		base += fmt.Sprintf(" seed %d", seed)
	}
	return base
}

// cdf returns the empirical CDF of xs as steps: (x_i, i/n) for the sorted
// values, starting at (x_0, 0). Non-positive values are dropped on a log
// axis (they cannot be drawn there).
func cdf(xs []float64, logX bool) plotter.XYs {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || (logX && x <= 0) {
			continue
		}
		v = append(v, x)
	}
	sort.Float64s(v)
	n := float64(len(v))
	pts := make(plotter.XYs, 0, 2*len(v))
	for i, x := range v {
		pts = append(pts, plotter.XY{X: x, Y: float64(i) / n}, plotter.XY{X: x, Y: float64(i+1) / n})
	}
	return pts
}

// simPlot is an empty simulation figure: opt's title (else the default),
// the axes' labels and the y axis from 0 to yMax.
func simPlot(opt SimOptions, defaultTitle, xLabel, yLabel string, yMax float64) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = opt.Title
	if p.Title.Text == "" {
		p.Title.Text = defaultTitle
	}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Y.Min, p.Y.Max = 0, yMax
	return p
}

// JCTCDF draws the series' JCT CDFs to w in format ("png", "svg", ...).
func JCTCDF(w io.Writer, format string, series []JCTSeries, opt SimOptions) error {
	if len(series) == 0 {
		return errors.New("jct cdf: no series")
	}
	p := simPlot(opt, "Job completion time CDF", "JCT (hours)", "fraction of jobs", 1)
	logX := !opt.LinearX
	if logX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	var args []any
	for _, s := range series {
		if pts := cdf(s.JCTHours, logX); len(pts) > 0 {
			args = append(args, s.Label, pts)
		}
	}
	if len(args) == 0 {
		return errors.New("jct cdf: no finished jobs to draw")
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return fmt.Errorf("jct cdf: %w", err)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return writePlot(w, p, SimWidth, SimHeight, format, "jct cdf")
}

// Utilization draws allocated GPU, CPU and memory (percent of the cluster)
// over simulated hours.
func Utilization(w io.Writer, format string, points []simcore.UtilPoint, opt SimOptions) error {
	if len(points) == 0 {
		return errors.New("utilization: no points")
	}
	p := simPlot(opt, "Cluster allocation", "time (hours)", "allocated (%)", 100)
	var gpu, cpu, mem plotter.XYs
	for _, u := range points {
		for _, x := range []float64{u.StartS / 3600, u.EndS / 3600} {
			gpu = append(gpu, plotter.XY{X: x, Y: u.GPUPct})
			cpu = append(cpu, plotter.XY{X: x, Y: u.CPUPct})
			mem = append(mem, plotter.XY{X: x, Y: u.MemPct})
		}
	}
	if err := plotutil.AddLines(p, "GPU", gpu, "CPU", cpu, "memory", mem); err != nil {
		return fmt.Errorf("utilization: %w", err)
	}
	// A run's allocation rises from zero and falls at the end: the top
	// left corner is the emptiest.
	p.Legend.Top = true
	p.Legend.Left = true
	return writePlot(w, p, SimWidth, SimHeight, format, "utilization")
}

// SaveJCTCDF writes the JCT CDF to path in the format of its extension.
func SaveJCTCDF(path string, series []JCTSeries, opt SimOptions) error {
	return saveAtomic(path, "jct cdf", FormatOf, func(w io.Writer, f string) error { return JCTCDF(w, f, series, opt) })
}

// allocationPaths names the files SaveAllocations writes for runs: path
// itself for a single run; otherwise one per run, path with the run's
// strategy and policy (and its load and seed where those vary across the
// sweep) before the extension, e.g. alloc-tune-fifo.png.
func allocationPaths(path string, runs []simcore.Run) []string {
	if len(runs) == 1 {
		return []string{path}
	}
	l := newLabeller(runs)
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	out := make([]string, len(runs))
	for i, r := range runs {
		name := stem + "-" + r.Point.Strategy + "-" + r.Point.Policy
		if len(l.loads) > 1 {
			name += fmt.Sprintf("-%gjph", r.Point.JobsPerHour)
		}
		if len(l.seeds) > 1 {
			name += fmt.Sprintf("-seed%d", r.Point.Seed)
		}
		out[i] = name + ext
	}
	return out
}

// SaveAllocations draws each run's allocated GPU, CPU and memory per hour
// of simulated time (its result's SharesHourly), one file per run at
// allocationPaths(path, runs), the format by the extension. The title
// names the run and opt's title. A run without hourly shares (one that
// ran no round, or a typed one) is an error naming it; nothing is written
// then. On a later error the paths already written are returned with it.
func SaveAllocations(path string, runs []simcore.Run, opt SimOptions) ([]string, error) {
	if len(runs) == 0 {
		return nil, errors.New("allocation: no runs")
	}
	paths, labels := allocationPaths(path, runs), runLabels(runs)
	for i, r := range runs {
		if r.Result == nil || len(r.Result.SharesHourly) == 0 {
			return nil, fmt.Errorf("allocation: run %s records no allocation over time (it ran no round)", labels[i])
		}
	}
	for i, r := range runs {
		o := opt
		o.Title = "Cluster allocation, " + labels[i]
		if opt.Title != "" {
			o.Title += ", " + opt.Title
		}
		err := saveAtomic(paths[i], "allocation", FormatOf, func(w io.Writer, f string) error {
			return Utilization(w, f, r.Result.SharesHourly, o)
		})
		if err != nil {
			return paths[:i], err
		}
	}
	return paths, nil
}
