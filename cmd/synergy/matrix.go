package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/report"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Flag names of `synergy matrix`.
const (
	matFlagPlot       = "plot"
	matFlagTitle      = "title"
	matFlagJSON       = "json"
	matFlagFormat     = "format"
	matFlagServerCPUs = "server-cpus"
	matFlagServerMem  = "server-mem"
	matFlagServerGPUs = "server-gpus"
	matFlagGPUType    = "gpu-type"
	matFlagHoldout    = "holdout"
	matFlagTimeline   = "timeline"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "show, compare, export and validate a profile's CPU × memory matrix",
		Description: "A profile's unmeasured cells are predicted by the fitted model (docs/model.md): min of the GPU-bound\n" +
			"plateau, a concave CPU curve and a fetch-bound rate from the page-cache hit curve. A profile whose grid\n" +
			"has holes is filled on reading.",
		Commands: []*cli.Command{
			matrixSubcommand("show", "PROFILE", "print the matrix (measured ± 95% CI, ~predicted) and optionally draw it as a heatmap", runMatrixShow,
				&cli.StringFlag{Name: matFlagPlot, Usage: "also draw a heatmap to `FILE`, .png or .svg (measured cells ringed)"},
				&cli.StringFlag{Name: matFlagTitle, DefaultText: "the job's name, and the point's for a timeline", Usage: "`TITLE` of the heatmap or timeline"},
				&cli.StringFlag{Name: matFlagTimeline, Usage: "with --plot: draw one `POINT`'s GPU (or emulated step) use, data wait and CPU use over time instead, e.g. \"cpus=1 mem=unlimited\" or \"cpus=0.5 mem=64MiB\""},
				&cli.BoolFlag{Name: matFlagGPU, Usage: "also print each measured cell's GPU utilisation (and the job's SM share) over its measured iterations beside its throughput"}),
			matrixSubcommand("diff", "A B", "cell-by-cell % difference of A against B on their common grid, with A's prediction error on the cells it did not measure", runMatrixDiff,
				&cli.BoolFlag{Name: matFlagJSON, Usage: "print the comparison as JSON (cells, MAPE, worst, MinIO baseline)"}),
			exportCommand(),
			matrixSubcommand("validate", "PROFILE", "refit without the cells measured for validation (without any: leave one measured cell out at a time; or --holdout K) and report MAPE and the worst cell against the MinIO formula", runMatrixValidate,
				&cli.IntFlag{Name: matFlagHoldout, DefaultText: "the cells measured for validation; 1 when there are none", Usage: "leave `K` measured cells out at a time, refit on the rest and score the fit on them"},
				&cli.BoolFlag{Name: matFlagJSON, Usage: "print the validation as JSON"}),
		},
	}
}

// matrixSubcommand is one `synergy matrix` subcommand.
func matrixSubcommand(name, args, usage string, action cli.ActionFunc, flags ...cli.Flag) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, ArgsUsage: args, Flags: flags, Action: action}
}

func exportCommand() *cli.Command {
	c := matrixSubcommand("export", "PROFILE", "write the matrix for a scheduler: synergy-grid, gavel, slurm or k8s", runMatrixExport,
		&cli.StringFlag{Name: matFlagFormat, Usage: "`FORMAT` (required): " + strings.Join(sensitivity.ExportFormats(), ", ")},
		&cli.FloatFlag{Name: matFlagServerCPUs, Value: 24, Usage: "synergy-grid, gavel: `CPUS` per server"},
		&cli.StringFlag{Name: matFlagServerMem, Value: "500GB", Usage: "synergy-grid, gavel: `SIZE` of memory per server"},
		&cli.IntFlag{Name: matFlagServerGPUs, Value: 8, Usage: "synergy-grid, gavel: `GPUS` per server"},
		&cli.StringFlag{Name: matFlagGPUType, DefaultText: "the NVML device name, else the GPU mode", Usage: "gavel: the GPU `TYPE` key"})
	c.Description = "synergy-grid: Synergy's 9×5 table (CPUs 1..24 × 20.83..250 GB per GPU on a 24-CPU, 500 GB, 8-GPU\n" +
		"server, scaled to --server-*), normalised to the fair share; cells outside the profiled range are clamped\n" +
		"to its edge and listed in \"clamped\". gavel: Gavel's throughputs JSON (steps/s at the fair share).\n" +
		"slurm, k8s: the smallest CPUs and memory reaching 95% of the best throughput."
	return c
}

// matrixArgs returns exactly n profile paths or an error naming the usage.
func matrixArgs(c *cli.Command, n int) ([]string, error) {
	a := c.Args().Slice()
	if len(a) != n {
		return nil, fmt.Errorf("matrix %s: want %s, got %d argument(s)", c.Name, c.ArgsUsage, len(a))
	}
	return a, nil
}

func runMatrixShow(_ context.Context, c *cli.Command) error {
	args, err := matrixArgs(c, 1)
	if err != nil {
		return err
	}
	plot := c.String(matFlagPlot)
	if plot != "" {
		if _, err := report.ProfileFormatOf(plot); err != nil {
			return fmt.Errorf("--%s: %w", matFlagPlot, err)
		}
	}
	p, err := sensitivity.LoadFilled(args[0])
	if err != nil {
		return err
	}
	w := c.Root().Writer
	if point := c.String(matFlagTimeline); point != "" {
		if plot == "" {
			return fmt.Errorf("--%s: needs --%s FILE.png|.svg to draw to", matFlagTimeline, matFlagPlot)
		}
		return showTimeline(w, args[0], p, point, plot, c.String(matFlagTitle))
	}
	if err := printMatrix(w, p); err != nil {
		return err
	}
	if c.Bool(matFlagGPU) {
		if err := printGPUGrid(w, p); err != nil {
			return err
		}
	}
	printFitAndValidation(w, p)
	if plot != "" {
		if err := report.SaveHeatmap(plot, p, c.String(matFlagTitle)); err != nil {
			return fmt.Errorf("--%s: %w", matFlagPlot, err)
		}
		fmt.Fprintf(w, "heatmap: %s\n", plot)
	}
	return nil
}

// printFitAndValidation prints the profile's strategy, cost, fit and
// validation in a few lines.
func printFitAndValidation(w io.Writer, p *sensitivity.Profile) {
	measured := len(p.MeasuredOK())
	fmt.Fprintf(w, "strategy %s: %d of %d cells measured, %d points in %.0f s\n", orDash(p.Strategy), measured,
		len(p.Axes.CPUs)*len(p.Axes.MemLimitBytes), p.Cost.Points, p.Cost.WallSeconds)
	if p.Fit != nil && len(p.Fit.Params) > 0 {
		keys := make([]string, 0, len(p.Fit.Params))
		for k := range p.Fit.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%.4g", k, p.Fit.Params[k]))
		}
		fmt.Fprintf(w, "fit %s: %s\n", p.Fit.Model, strings.Join(parts, " "))
	}
	if v := p.Validation; v != nil {
		fmt.Fprintln(w, validationLine(v))
	}
}

func validationLine(v *sensitivity.Validation) string {
	s := fmt.Sprintf("validation over %d cells: MAPE %.2f%%, worst %.2f%% at cpus=%g mem=%s", v.Cells, v.MAPEPct, v.WorstErrPct, v.WorstCPUs, report.MemLabel(v.WorstMemBytes))
	if v.BaselineName != "" {
		s += fmt.Sprintf("; %s MAPE %.2f%%", v.BaselineName, v.BaselineMAPEPct)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runMatrixDiff(_ context.Context, c *cli.Command) error {
	args, err := matrixArgs(c, 2)
	if err != nil {
		return err
	}
	a, err := sensitivity.LoadFilled(args[0])
	if err != nil {
		return err
	}
	b, err := sensitivity.LoadFilled(args[1])
	if err != nil {
		return err
	}
	cmp, err := sensitivity.Compare(a, b)
	if err != nil {
		return fmt.Errorf("matrix diff %s %s: %w", args[0], args[1], err)
	}
	w := c.Root().Writer
	if c.Bool(matFlagJSON) {
		return printJSON(w, cmp)
	}
	return printDiff(w, a, cmp, args[0], args[1])
}

func printDiff(w io.Writer, a *sensitivity.Profile, cmp *sensitivity.Comparison, nameA, nameB string) error {
	byCell := map[[2]float64]sensitivity.CellDiff{}
	for _, d := range cmp.Cells {
		byCell[[2]float64{d.CPUs, float64(d.MemLimitBytes)}] = d
	}
	caption := fmt.Sprintf("(A − B) / B per cell, A = %s, B = %s; ~ where A predicted the cell", nameA, nameB)
	err := printGrid(w, a.Axes, caption, func(cpus float64, mem int64) string {
		d, ok := byCell[[2]float64{cpus, float64(mem)}]
		switch {
		case !ok:
			return "-"
		case d.BZero && d.A == 0:
			return "0 = 0"
		case d.BZero:
			return fmt.Sprintf("%.1f vs 0", d.A)
		case !d.AMeasured:
			return fmt.Sprintf("~%+.1f%%", d.DiffPct)
		}
		return fmt.Sprintf("%+.1f%%", d.DiffPct)
	})
	if err != nil {
		return err
	}
	if cmp.Scored == 0 {
		fmt.Fprintf(w, "A measured every common cell: no prediction to score (MAPE over all cells %.2f%%)\n", cmp.AllMAPEPct)
		return nil
	}
	fmt.Fprintf(w, "A's predictions vs B over %d cells: MAPE %.2f%%, worst %.2f%% at cpus=%g mem=%s\n",
		cmp.Scored, cmp.MAPEPct, cmp.WorstErrPct, cmp.WorstCPUs, report.MemLabel(cmp.WorstMemBytes))
	if cmp.BaselineCells > 0 {
		fmt.Fprintf(w, "%s (from A's measured cells) on %d of them: MAPE %.2f%%\n", cmp.BaselineName, cmp.BaselineCells, cmp.BaselineMAPEPct)
	}
	if cmp.BothMeasured > 0 {
		fmt.Fprintf(w, "cells both measured (%d): they differ by %.2f%% on average (run-to-run noise)\n", cmp.BothMeasured, cmp.RepeatMAPEPct)
	}
	return nil
}

func runMatrixExport(_ context.Context, c *cli.Command) error {
	format := c.String(matFlagFormat)
	if format == "" {
		return fmt.Errorf("--%s: missing (one of %s)", matFlagFormat, strings.Join(sensitivity.ExportFormats(), ", "))
	}
	known := false
	for _, f := range sensitivity.ExportFormats() {
		known = known || f == format
	}
	if !known {
		return fmt.Errorf("--%s: %q is not one of %s", matFlagFormat, format, strings.Join(sensitivity.ExportFormats(), ", "))
	}
	s := sensitivity.ServerShape{CPUs: c.Float(matFlagServerCPUs), GPUs: int(c.Int(matFlagServerGPUs))}
	if !(s.CPUs > 0) || math.IsInf(s.CPUs, 0) {
		return fmt.Errorf("--%s: %v is not a positive number", matFlagServerCPUs, s.CPUs)
	}
	if s.GPUs < 1 {
		return fmt.Errorf("--%s: %d is not a positive number of GPUs", matFlagServerGPUs, s.GPUs)
	}
	mem, err := units.ParseBytes(c.String(matFlagServerMem))
	if err != nil {
		return fmt.Errorf("--%s: %w", matFlagServerMem, err)
	}
	if mem <= 0 {
		return fmt.Errorf("--%s: %q is not a positive size", matFlagServerMem, c.String(matFlagServerMem))
	}
	s.MemBytes = mem
	args, err := matrixArgs(c, 1)
	if err != nil {
		return err
	}
	p, err := sensitivity.LoadFilled(args[0])
	if err != nil {
		return err
	}
	if format == sensitivity.FormatSynergyGrid {
		// Say on stderr what was clamped; stdout stays the JSON alone.
		if g, err := sensitivity.ExportSynergyGrid(p, s); err == nil && g.ClampedCells > 0 {
			fmt.Fprintf(c.Root().ErrWriter, "synergy-grid: %d of 45 cells lie outside the profiled range (%g–%g CPUs, %s–%s per GPU) and were clamped to its edge, not extrapolated (\"clamped\" in the JSON)\n",
				g.ClampedCells, g.ProfiledCPUs[0], g.ProfiledCPUs[1], units.FormatBytes(int64(g.ProfiledMemBytes[0])), units.FormatBytes(int64(g.ProfiledMemBytes[1])))
		}
	}
	if err := sensitivity.Export(c.Root().Writer, p, format, sensitivity.ExportOptions{Server: s, GPUType: c.String(matFlagGPUType)}); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}

func runMatrixValidate(_ context.Context, c *cli.Command) error {
	args, err := matrixArgs(c, 1)
	if err != nil {
		return err
	}
	k := int(c.Int(matFlagHoldout))
	if c.IsSet(matFlagHoldout) && k < 1 {
		return fmt.Errorf("--%s: %d, want at least 1 cell to leave out", matFlagHoldout, k)
	}
	p, err := sensitivity.Load(args[0])
	if err != nil {
		return err
	}
	var v *sensitivity.Validation
	skipped := 0
	fallback := ""
	if k == 0 {
		v, err = sensitivity.ValidateCells(p)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if v == nil {
			// No cell was measured for validation (as in make demo's
			// axes profile): leave one measured cell out at a time.
			k = 1
			fallback = fmt.Sprintf("no cell was measured for validation (phase %q; synergy profile --validate K measures some)", sensitivity.PhaseValidate)
		}
	}
	if k > 0 {
		v, skipped, err = sensitivity.Holdout(p, k)
		if err != nil && fallback != "" {
			return fmt.Errorf("%s: %s, and leave-1-out cannot stand in: %w", args[0], fallback, err)
		}
		if err != nil {
			return fmt.Errorf("--%s: %w", matFlagHoldout, err)
		}
	}
	w := c.Root().Writer
	if c.Bool(matFlagJSON) {
		if fallback != "" {
			fmt.Fprintf(c.Root().ErrWriter, "%s: %s: leave-1-out over the measured cells instead\n", args[0], fallback)
		}
		return printJSON(w, v)
	}
	how := fmt.Sprintf("refit without the %q cells", sensitivity.PhaseValidate)
	if k > 0 {
		how = fmt.Sprintf("leave-%d-out over the measured cells", k)
		if fallback != "" {
			how = fallback + ": leave-1-out over the measured cells instead"
		}
		if skipped > 0 {
			how += fmt.Sprintf(" (%d subsets skipped: no CPU point left to fit)", skipped)
		}
	}
	fmt.Fprintf(w, "%s: %s\n%s\n", args[0], how, validationLine(v))
	if v.BaselineName != "" && v.BaselineMAPEPct > 0 {
		fmt.Fprintf(w, "the fit's error is %.2fx the MinIO formula's\n", v.MAPEPct/v.BaselineMAPEPct)
	}
	return nil
}

// showTimeline draws one measured point's timeline from the files the
// profile records for it (its samples file and the metrics stream beside
// it).
func showTimeline(w io.Writer, profilePath string, p *sensitivity.Profile, point, plot, title string) error {
	cpus, mem, err := parsePointLabel(point)
	if err != nil {
		return fmt.Errorf("--%s: %w", matFlagTimeline, err)
	}
	cell := p.Cell(cpus, mem)
	if cell == nil || !cell.Measured {
		return fmt.Errorf("--%s: %q is not a measured point of %s", matFlagTimeline, point, profilePath)
	}
	memText := "unlimited"
	if mem > 0 {
		memText = units.FormatBytes(mem)
	}
	if cell.Stats == nil || cell.Stats.Timeline == "" {
		return fmt.Errorf("--%s: %s records no timeline for %q (was the profile made with --timeline?)", matFlagTimeline, profilePath, point)
	}
	d, err := report.ReadPointTimeline(cell.Stats.Timeline)
	if err != nil {
		return fmt.Errorf("--%s: %w (was the profile made with --timeline?)", matFlagTimeline, err)
	}
	if title == "" {
		title = fmt.Sprintf("%s at cpus=%g mem=%s", p.Job.Name, cpus, memText)
	}
	if err := report.SaveTimeline(plot, d, title); err != nil {
		return fmt.Errorf("--%s: %w", matFlagPlot, err)
	}
	fmt.Fprintf(w, "timeline of cpus=%g mem=%s: %d GPU, %d data-wait and %d CPU points (%s) drawn to %s\n",
		cpus, memText, len(d.GPU), len(d.DataWait), len(d.CPU), d.GPULabel, plot)
	return nil
}

// parsePointLabel reads a point as progress lines print it:
// "cpus=1 mem=unlimited", "cpus=0.5 mem=64MiB".
func parsePointLabel(s string) (cpus float64, mem int64, err error) {
	var cpusText, memText string
	for _, f := range strings.Fields(s) {
		switch k, v, _ := strings.Cut(f, "="); k {
		case "cpus":
			cpusText = v
		case "mem":
			memText = v
		default:
			return 0, 0, fmt.Errorf("%q: want \"cpus=N mem=SIZE|unlimited\"", s)
		}
	}
	if cpus, err = strconv.ParseFloat(cpusText, 64); err != nil || !(cpus > 0) {
		return 0, 0, fmt.Errorf("%q: cpus=%q is not a positive number", s, cpusText)
	}
	if memText == "" || memText == "unlimited" {
		return cpus, 0, nil
	}
	if mem, err = units.ParseBytes(memText); err != nil {
		return 0, 0, fmt.Errorf("%q: mem: %w", s, err)
	}
	return cpus, mem, nil
}
