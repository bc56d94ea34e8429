package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/report"
	"github.com/synergy-sched/synergy/sensitivity"
)

// printMatrix prints a profile's grid: one row per CPU count, one column per
// memory limit. Measured cells show "value ±ci"; predicted ones "~value",
// or "~OOM" where the fit predicts an OOM kill; failed ones their failure
// class.
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
	predicted := fitName(p)
	if slices.ContainsFunc(p.Cells, func(c sensitivity.Cell) bool { return cellText(&c) == "~OOM" }) {
		predicted += ", ~OOM: an OOM kill predicted"
	}
	caption := fmt.Sprintf("%s: throughput (%s) within passes over the data; ~ predicted (%s), ± 95%% CI of measured cells", p.Job.Name, unit, predicted)
	err := printGrid(w, p.Axes, caption, func(cpus float64, mem int64) string { return cellText(p.Cell(cpus, mem)) })
	if err != nil {
		return err
	}
	for _, warn := range p.Warnings {
		fmt.Fprintln(printable{w}, "warning:", warn)
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
	case !c.Measured && c.SamplesPerS == 0:
		return "~OOM" // the fit predicts an OOM kill at this limit (its only zero)
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
// newTable is a table printed to w with its control characters escaped
// (printable).
func newTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(printable{w},
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignRight),
		tablewriter.WithHeaderAlignment(tw.AlignRight))
}

// printable escapes the control characters of what it writes, but for
// newlines: a name from a file (a cluster's server, a Slurm node) cannot
// move the terminal's cursor, recolour it or set its title when a table
// shows it. ESC is written as \x1b, other C0 and C1 controls alike, and a
// bidirectional-text control (which reorders what is shown) as \u202e.
type printable struct{ w io.Writer }

func (p printable) Write(b []byte) (int, error) {
	if !hasControl(b) {
		return p.w.Write(b)
	}
	var out strings.Builder
	for _, r := range string(b) {
		switch {
		case r == '\n':
			out.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&out, "\\x%02x", r)
		case safefile.IsBidi(r):
			fmt.Fprintf(&out, "\\u%04x", r)
		default:
			out.WriteRune(r)
		}
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// hasControl reports whether b holds a control character but newline, or
// a bidirectional-text control.
func hasControl(b []byte) bool {
	for _, r := range string(b) {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || safefile.IsBidi(r)) {
			return true
		}
	}
	return false
}

// printJSON writes v as indented JSON with a trailing newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
