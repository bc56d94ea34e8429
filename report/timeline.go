package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/synergy-sched/synergy/internal/safefile"
)

// Series of a point's timeline, in percent over seconds since the start.
type TimelineData struct {
	// GPU is the GPUs' mean utilisation (NVML); for an emulated step it is
	// the step's share of each iteration's time, labelled as such.
	GPU      plotter.XYs
	GPULabel string
	// DataWait is the share of each iteration spent waiting for data.
	DataWait plotter.XYs
	// CPU is the job's cgroup CPU use, in percent of one core.
	CPU plotter.XYs
}

// ReadTimeline reads a point's samples file and metrics stream (either may
// be "" or missing; at least one must give a series).
func ReadTimeline(samplesPath, metricsPath string) (*TimelineData, error) {
	rows, err := readSampleRows(samplesPath)
	if err != nil {
		return nil, err
	}
	its, emulated, err := readIterations(metricsPath)
	if err != nil {
		return nil, err
	}
	t0 := math.Inf(1)
	for _, r := range rows {
		t0 = math.Min(t0, r.t)
	}
	if len(its) > 0 {
		t0 = math.Min(t0, its[0].ts)
	}
	d := &TimelineData{}
	d.addSampleSeries(rows, t0)
	// Without NVML samples the step's share of each iteration stands for
	// the GPU's busy time, labelled for what it is.
	stepAsGPU := len(d.GPU) == 0
	if stepAsGPU {
		d.GPULabel = stepLabel
		if emulated {
			d.GPULabel = emulatedLabel
		}
	}
	d.addIterationSeries(its, t0, stepAsGPU)
	if len(d.GPU)+len(d.DataWait)+len(d.CPU) == 0 {
		return nil, fmt.Errorf("timeline: no samples in %q nor iterations in %q", samplesPath, metricsPath)
	}
	return d, nil
}

// sampleRow is one sampling tick of a point: its time (Unix seconds), the
// cgroup's CPU seconds (NaN if absent) and each GPU's utilisation.
type sampleRow struct {
	t   float64
	cpu float64
	gpu []float64
}

// readSampleRows reads a samples file ("" or missing: none).
func readSampleRows(path string) ([]sampleRow, error) {
	if path == "" {
		return nil, nil
	}
	var rows []sampleRow
	err := eachJSONLine(path, func(line int, m map[string]float64) error {
		t, ok := m["time"]
		if !ok {
			return fmt.Errorf("%s:%d: no \"time\"", path, line)
		}
		r := sampleRow{t: t, cpu: math.NaN()}
		if v, ok := m["cg_cpu_usage_s"]; ok {
			r.cpu = v
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.HasPrefix(k, "gpu") && strings.HasSuffix(k, "_util_pct") && !strings.Contains(k, "_job_") && !strings.Contains(k, "_mem_") {
				r.gpu = append(r.gpu, m[k])
			}
		}
		rows = append(rows, r)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return rows, nil
}

// iteration is one line of a job's metrics stream: when it ended (Unix
// seconds), and its data wait and step seconds.
type iteration struct{ ts, wait, step float64 }

// readIterations reads a metrics stream ("" or missing: none) and whether
// the job said its GPU step is emulated.
func readIterations(path string) (its []iteration, emulated bool, err error) {
	if path == "" {
		return nil, false, nil
	}
	err = eachJSONLine(path, func(line int, m map[string]float64) error {
		its = append(its, iteration{m["ts"], m["data_wait_s"], m["step_s"]})
		emulated = emulated || m["emulated"] == 1
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	return its, emulated, nil
}

// addSampleSeries adds the cgroup's CPU use (% of one core between ticks)
// and the GPUs' mean utilisation (NVML) at seconds since t0.
func (d *TimelineData) addSampleSeries(rows []sampleRow, t0 float64) {
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if dt := b.t - a.t; dt > 0 && !math.IsNaN(a.cpu) && !math.IsNaN(b.cpu) {
			d.CPU = append(d.CPU, plotter.XY{X: b.t - t0, Y: 100 * (b.cpu - a.cpu) / dt})
		}
	}
	for _, r := range rows {
		if len(r.gpu) > 0 {
			var s float64
			for _, g := range r.gpu {
				s += g
			}
			d.GPU = append(d.GPU, plotter.XY{X: r.t - t0, Y: s / float64(len(r.gpu))})
			d.GPULabel = "GPU utilisation % (NVML)"
		}
	}
}

// addIterationSeries adds each iteration's data wait (% of its time) and,
// with stepAsGPU, its step's share as the GPU series.
func (d *TimelineData) addIterationSeries(its []iteration, t0 float64, stepAsGPU bool) {
	for i := 1; i < len(its); i++ {
		dt := its[i].ts - its[i-1].ts
		if dt <= 0 {
			continue
		}
		x := its[i].ts - t0
		d.DataWait = append(d.DataWait, plotter.XY{X: x, Y: math.Min(100, 100*its[i].wait/dt)})
		if stepAsGPU {
			d.GPU = append(d.GPU, plotter.XY{X: x, Y: math.Min(100, 100*its[i].step/dt)})
		}
	}
}

// Suffixes of a point's timeline files (docs/profile-format.md): the
// profile records the samples file; the metrics stream lies beside it.
const (
	samplesSuffix = ".samples.jsonl"
	metricsSuffix = ".metrics.jsonl"
)

// ReadPointTimeline reads the timeline of a point whose samples file a
// profile records (PointStats.Timeline): that file and the job's metrics
// stream the profiler kept beside it.
func ReadPointTimeline(samplesPath string) (*TimelineData, error) {
	return ReadTimeline(samplesPath, strings.TrimSuffix(samplesPath, samplesSuffix)+metricsSuffix)
}

const (
	emulatedLabel = "emulated GPU step % of iteration (no GPU)"
	stepLabel     = "step % of iteration"
)

// maxTimelineFileBytes bounds a timeline file read for a figure: a point
// sampled at 10 Hz for a day writes about 200 MiB.
const maxTimelineFileBytes = 512 << 20

// eachJSONLine calls fn with every line of a JSON-lines file as a map of
// its numeric values (booleans as 0/1, an RFC 3339 "time" as Unix seconds).
func eachJSONLine(path string, fn func(line int, m map[string]float64) error) error {
	f, _, err := safefile.OpenNoFollow(path, maxTimelineFileBytes, "timeline")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		m := make(map[string]float64, len(raw))
		for k, v := range raw {
			switch x := v.(type) {
			case float64:
				m[k] = x
			case bool:
				if x {
					m[k] = 1
				}
			case string:
				if k == "time" {
					tm, err := time.Parse(time.RFC3339Nano, x)
					if err != nil {
						return fmt.Errorf("%s:%d: time: %w", path, n, err)
					}
					m[k] = float64(tm.UnixNano()) / 1e9
				}
			}
		}
		if err := fn(n, m); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Timeline draws a point's GPU (or emulated step) utilisation, data wait and
// CPU use over time, in percent (CPU: of one core, so 200% is two cores).
func Timeline(w io.Writer, format string, d *TimelineData, title string) error {
	pl := gplot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "seconds since the point started"
	pl.Y.Label.Text = "%"
	type series struct {
		xy    plotter.XYs
		label string
		c     color.RGBA
	}
	for _, s := range []series{
		{d.GPU, d.GPULabel, color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}},
		{d.DataWait, "data wait % of iteration", color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}},
		{d.CPU, "CPU use % of one core (cgroup)", color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff}},
	} {
		if len(s.xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return fmt.Errorf("timeline: %w", err)
		}
		l.Color = s.c
		l.Width = vg.Points(1)
		pl.Add(l)
		pl.Legend.Add(s.label, l)
	}
	// Headroom above the data for the legend, which sits at the top.
	top := 100.0
	for _, xy := range []plotter.XYs{d.GPU, d.DataWait, d.CPU} {
		for _, p := range xy {
			top = math.Max(top, p.Y)
		}
	}
	pl.Legend.Top = true
	pl.Y.Min, pl.Y.Max = 0, top*1.35
	return writePlot(w, pl, Width, Height, format, "timeline")
}

// SaveTimeline draws a point's timeline to path (.png or .svg).
func SaveTimeline(path string, d *TimelineData, title string) error {
	return saveAtomic(path, "timeline", ProfileFormatOf, func(w io.Writer, format string) error { return Timeline(w, format, d, title) })
}
