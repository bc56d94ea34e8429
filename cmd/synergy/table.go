package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/synergy-sched/synergy/report"
	"github.com/synergy-sched/synergy/sensitivity"
)

// printMatrix prints a profile's grid: one row per CPU count, one column per
// memory limit. Measured cells show "value ±ci"; predicted ones "~value";
// failed ones their failure class.
func printMatrix(w io.Writer, p *sensitivity.Profile) error {
	unit := "samples/s"
	switch {
	case p.GPU.Mode == sensitivity.GPUModeEmulated && p.GPU.Type != "":
		unit += ", GPU step emulated as a " + p.GPU.Type + " (not measured on a GPU)"
	case p.GPU.Mode == sensitivity.GPUModeEmulated:
		unit += ", GPU step emulated (not measured on a GPU)"
	case p.GPU.Type != "":
		unit += " on a " + p.GPU.Type
	}
	caption := fmt.Sprintf("%s: throughput (%s); ~ predicted (%s), ± 95%% CI of measured cells", p.Job.Name, unit, fitName(p))
	err := printGrid(w, p.Axes, caption, func(cpus float64, mem int64) string { return cellText(p.Cell(cpus, mem)) })
	if err != nil {
		return err
	}
	for _, warn := range p.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	return nil
}

// printGrid prints caption, then a table of a grid: one row per CPU count,
// one column per memory limit, each cell as text gives it.
func printGrid(w io.Writer, axes sensitivity.Axes, caption string, text func(cpus float64, mem int64) string) error {
	header := []string{"cpus \\ mem"}
	for _, m := range axes.MemLimitBytes {
		header = append(header, report.MemLabel(m))
	}
	t := newTable(w)
	t.Header(header)
	for _, c := range axes.CPUs {
		row := []string{fmt.Sprintf("%g", c)}
		for _, m := range axes.MemLimitBytes {
			row = append(row, text(c, m))
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, caption)
	return t.Render()
}

func fitName(p *sensitivity.Profile) string {
	if p.Fit == nil {
		return "none"
	}
	return p.Fit.Model
}

func cellText(c *sensitivity.Cell) string {
	switch {
	case c == nil:
		return "-"
	case c.Failure != nil:
		return c.Failure.Class
	case !c.Measured:
		return fmt.Sprintf("~%.1f", c.SamplesPerS)
	case c.Stats != nil && c.Stats.Unconverged != "":
		return fmt.Sprintf("%.1f ±%.1f unconverged", c.SamplesPerS, c.SamplesPerSCI95)
	case c.Stats != nil && c.Stats.MetricsSource == sensitivity.MetricsWall:
		return fmt.Sprintf("%.1f ±?", c.SamplesPerS) // one wall-time figure: no interval
	default:
		return fmt.Sprintf("%.1f ±%.1f", c.SamplesPerS, c.SamplesPerSCI95)
	}
}

// newTable is the table style of every synergy command: plain headers (no
// auto-capitalisation, which would mangle units like "MiB"), numbers
// right-aligned.
func newTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignRight),
		tablewriter.WithHeaderAlignment(tw.AlignRight))
}

// printJSON writes v as indented JSON with a trailing newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
