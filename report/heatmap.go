package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"

	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Size of a profile's figures (heatmap, timeline).
const (
	Width  = 16 * vg.Centimeter
	Height = 11 * vg.Centimeter
)

// Formats Heatmap writes.
const (
	FormatPNG = "png"
	FormatSVG = "svg"
)

// grid adapts a profile to plotter.GridXYZ: columns are memory limits (in
// axis order, unlimited last), rows CPU counts, each at its index so that
// uneven axes get even cells.
type grid struct {
	p    *sensitivity.Profile
	vals [][]float64 // [row=cpu][col=mem]
}

func (g grid) Dims() (c, r int)   { return len(g.p.Axes.MemLimitBytes), len(g.p.Axes.CPUs) }
func (g grid) Z(c, r int) float64 { return g.vals[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Min() float64       { return 0 }
func (g grid) Max() (m float64) {
	for _, row := range g.vals {
		for _, v := range row {
			m = math.Max(m, v)
		}
	}
	if m == 0 {
		m = 1
	}
	return m
}

// MemLabel is a memory limit as the axes print it: "unlimited" for 0.
func MemLabel(b int64) string { return units.FormatMemLimit(b) }

// Heatmap draws p's grid (samples/s; colour from 0 to the best cell) to w
// in format (png or svg). Every cell is labelled with its value: measured
// cells as "123", predicted ones as "~123", failed ones with their failure
// class, missing ones "-"; measured cells are also ringed. Same profile,
// same SVG bytes.
func Heatmap(w io.Writer, format string, p *sensitivity.Profile, title string) error {
	if len(p.Axes.CPUs) == 0 || len(p.Axes.MemLimitBytes) == 0 {
		return errors.New("heatmap: the profile's axes are empty")
	}
	if format != FormatPNG && format != FormatSVG {
		return fmt.Errorf("heatmap: format %q: want png or svg", format)
	}
	g, labels, measured := heatmapCells(p)
	pal, err := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 9)
	if err != nil {
		return fmt.Errorf("heatmap: palette: %w", err)
	}
	hm := plotter.NewHeatMap(g, pal)
	hm.NaN = color.Gray{Y: 230}
	// Stop short of the palette's darkest colours so black labels stay
	// readable on the best cells.
	hm.Max *= 1.5
	pl := gplot.New()
	if title == "" {
		title = p.Job.Name
	}
	unit := "samples/s"
	if p.GPU.Mode == sensitivity.GPUModeEmulated {
		unit += ", GPU step emulated"
	}
	pl.Title.Text = fmt.Sprintf("%s: throughput (%s); ringed = measured, ~ = predicted", title, unit)
	pl.X.Label.Text = "memory limit"
	pl.Y.Label.Text = "CPUs"
	pl.Add(hm)

	if len(measured) > 0 {
		sc, err := plotter.NewScatter(measured)
		if err != nil {
			return fmt.Errorf("heatmap: marks: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: draw.RingGlyph{}, Radius: vg.Points(14), Color: color.Gray{Y: 40}}
		pl.Add(sc)
	}

	lp, err := plotter.NewLabels(labels)
	if err != nil {
		return fmt.Errorf("heatmap: labels: %w", err)
	}
	for i := range lp.TextStyle {
		lp.TextStyle[i].XAlign = -0.5
		lp.TextStyle[i].YAlign = -0.5
	}
	pl.Add(lp)
	gridAxes(pl, p.Axes)
	return writePlot(w, pl, Width, Height, format, "heatmap")
}

// heatmapCells reads p's grid: the values (NaN where a cell is missing),
// every cell's label and the positions of the measured cells.
func heatmapCells(p *sensitivity.Profile) (g grid, labels plotter.XYLabels, measured plotter.XYs) {
	g.p = p
	for r, c := range p.Axes.CPUs {
		row := make([]float64, len(p.Axes.MemLimitBytes))
		for ci, m := range p.Axes.MemLimitBytes {
			cell := p.Cell(c, m)
			lab := "-"
			switch {
			case cell == nil:
				row[ci] = math.NaN()
			case cell.Failure != nil:
				lab = strings.ReplaceAll(cell.Failure.Class, "_", " ")
			case cell.Measured:
				row[ci] = cell.SamplesPerS
				lab = valueText(cell.SamplesPerS)
			default:
				row[ci] = cell.SamplesPerS
				lab = "~" + valueText(cell.SamplesPerS)
			}
			if cell != nil && cell.Measured {
				measured = append(measured, plotter.XY{X: float64(ci), Y: float64(r)})
			}
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(ci), Y: float64(r)})
			labels.Labels = append(labels.Labels, lab)
		}
		g.vals = append(g.vals, row)
	}
	return g, labels, measured
}

// gridAxes labels the heatmap's axes with the profile's memory limits and
// CPU counts, one cell per tick.
func gridAxes(pl *gplot.Plot, a sensitivity.Axes) {
	var xt, yt gplot.ConstantTicks
	for i, m := range a.MemLimitBytes {
		xt = append(xt, gplot.Tick{Value: float64(i), Label: MemLabel(m)})
	}
	for i, c := range a.CPUs {
		yt = append(yt, gplot.Tick{Value: float64(i), Label: fmt.Sprintf("%g", c)})
	}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = xt, yt
	pl.X.Min, pl.X.Max = -0.5, float64(len(a.MemLimitBytes))-0.5
	pl.Y.Min, pl.Y.Max = -0.5, float64(len(a.CPUs))-0.5
}

func valueText(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// SaveHeatmap writes the heatmap to path in the format of its extension,
// through a temporary file so a reader never sees half a figure.
func SaveHeatmap(path string, p *sensitivity.Profile, title string) error {
	return saveAtomic(path, "heatmap", ProfileFormatOf, func(w io.Writer, format string) error { return Heatmap(w, format, p, title) })
}
