package main

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// printMatrix prints a profile's grid: one row per CPU count, one column per
// memory limit. Measured cells show "value ±ci"; predicted ones "~value";
// failed ones their failure class.
func printMatrix(w io.Writer, p *sensitivity.Profile) error {
	header := []string{"cpus \\ mem"}
	for _, m := range p.Axes.MemLimitBytes {
		if sensitivity.Unlimited(m) {
			header = append(header, "unlimited")
		} else {
			header = append(header, units.FormatBytes(m))
		}
	}
	t := newTable(w)
	t.Header(header)
	for _, c := range p.Axes.CPUs {
		row := []string{fmt.Sprintf("%g", c)}
		for _, m := range p.Axes.MemLimitBytes {
			row = append(row, cellText(p.Cell(c, m)))
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	unit := "samples/s"
	if p.GPU.Mode == sensitivity.GPUModeEmulated {
		unit += ", GPU step emulated (not measured on a GPU)"
	}
	fmt.Fprintf(w, "%s: throughput (%s); ~ predicted (%s), ± 95%% CI of measured cells\n", p.Job.Name, unit, fitName(p))
	if err := t.Render(); err != nil {
		return err
	}
	for _, warn := range p.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	return nil
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
