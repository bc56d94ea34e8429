package plot

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/synergy-sched/synergy/scheduler/sim"
)

// Size of every figure.
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// JCTSeries is one line of a JCT CDF: a label and job completion times in
// hours.
type JCTSeries struct {
	Label    string
	JCTHours []float64
}

// Options adjust a figure.
type Options struct {
	Title string
	// LinearX draws hours on a linear axis; the default is log scale
	// (JCTs span minutes to weeks).
	LinearX bool
}

// SeriesFromSweep makes one JCT series per run of a sweep, from the
// window's finished jobs. Labels name strategy and policy ("tune+fifo"),
// plus the load and seed when those vary across the sweep.
func SeriesFromSweep(res *sim.SweepResult) []JCTSeries {
	loads, seeds := map[float64]bool{}, map[uint64]bool{}
	for _, r := range res.Runs {
		loads[r.Point.JobsPerHour] = true
		seeds[r.Point.Seed] = true
	}
	var out []JCTSeries
	for _, r := range res.Runs {
		label := r.Point.Strategy + "+" + r.Point.Policy
		if len(loads) > 1 {
			label += fmt.Sprintf(" %g jobs/h", r.Point.JobsPerHour)
		}
		if len(seeds) > 1 {
			label += fmt.Sprintf(" seed %d", r.Point.Seed)
		}
		s := JCTSeries{Label: label}
		if r.Result != nil {
			for _, j := range r.Result.Jobs {
				s.JCTHours = append(s.JCTHours, (j.FinishS-j.ArrivalS)/3600)
			}
		}
		out = append(out, s)
	}
	return out
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

// JCTCDF draws the series' JCT CDFs to w in format ("png", "svg", ...).
func JCTCDF(w io.Writer, format string, series []JCTSeries, opt Options) error {
	if len(series) == 0 {
		return errors.New("jct cdf: no series")
	}
	p := gplot.New()
	p.Title.Text = opt.Title
	if p.Title.Text == "" {
		p.Title.Text = "Job completion time CDF"
	}
	p.X.Label.Text = "JCT (hours)"
	p.Y.Label.Text = "fraction of jobs"
	p.Y.Min, p.Y.Max = 0, 1
	logX := !opt.LinearX
	if logX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	var args []any
	drawn := 0
	for _, s := range series {
		pts := cdf(s.JCTHours, logX)
		if len(pts) == 0 {
			continue
		}
		args = append(args, s.Label, pts)
		drawn++
	}
	if drawn == 0 {
		return errors.New("jct cdf: no finished jobs to draw")
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return fmt.Errorf("jct cdf: %w", err)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return write(p, w, format)
}

// Utilization draws allocated GPU, CPU and memory (percent of the cluster)
// over simulated hours.
func Utilization(w io.Writer, format string, points []sim.UtilPoint, opt Options) error {
	if len(points) == 0 {
		return errors.New("utilization: no points")
	}
	p := gplot.New()
	p.Title.Text = opt.Title
	if p.Title.Text == "" {
		p.Title.Text = "Cluster allocation"
	}
	p.X.Label.Text = "time (hours)"
	p.Y.Label.Text = "allocated (%)"
	p.Y.Min, p.Y.Max = 0, 100
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
	return write(p, w, format)
}

func write(p *gplot.Plot, w io.Writer, format string) error {
	wt, err := p.WriterTo(Width, Height, format)
	if err != nil {
		return fmt.Errorf("plot format %q: %w", format, err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

// FormatOf is a file name's plot format: its extension, lower case.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg", "pdf", "eps", "jpg", "jpeg", "tif", "tiff":
		return ext, nil
	case "":
		return "", fmt.Errorf("%s: no extension to choose the format by (.png, .svg, .pdf)", path)
	}
	return "", fmt.Errorf("%s: unknown plot format %q (.png, .svg, .pdf, .eps, .jpg, .tif)", path, ext)
}

// SaveJCTCDF writes the JCT CDF to path in the format of its extension.
func SaveJCTCDF(path string, series []JCTSeries, opt Options) error {
	return save(path, func(w io.Writer, f string) error { return JCTCDF(w, f, series, opt) })
}

// SaveUtilization writes the utilisation plot to path.
func SaveUtilization(path string, points []sim.UtilPoint, opt Options) error {
	return save(path, func(w io.Writer, f string) error { return Utilization(w, f, points, opt) })
}

func save(path string, draw func(io.Writer, string) error) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	if err := draw(f, format); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
