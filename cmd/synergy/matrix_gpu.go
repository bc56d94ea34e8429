package main

import (
	"fmt"
	"io"

	"github.com/synergy-sched/synergy/sensitivity"
)

const matFlagGPU = "gpu"

// printGPUGrid prints each measured cell's GPU utilisation beside its
// throughput: "1,721 @ 55.7% (SM 26.9%)", the GPU busy over the measured
// iterations and the job's processes' share of the SMs; "-" where the cell
// has no GPU samples (no NVML, an emulated step, a predicted cell).
func printGPUGrid(w io.Writer, p *sensitivity.Profile) error {
	over := "the measured iterations"
	for _, c := range p.Cells {
		if c.Stats != nil && c.Stats.GPUStatsOver == sensitivity.GPUStatsLaunch {
			over += " (launch-wide where marked *: fewer than two iterations measured)"
			break
		}
	}
	caption := fmt.Sprintf("%s: samples/s @ GPU utilisation over %s (SM: the job's processes' share of the SMs)", p.Job.Name, over)
	return printGrid(w, p.Axes, caption, func(cpus float64, mem int64) string {
		c := p.Cell(cpus, mem)
		if c == nil || !c.Measured || c.Failure != nil || c.Stats == nil || c.Stats.GPUStatsOver == "" {
			return "-"
		}
		s := fmt.Sprintf("%.1f @ %.1f%%", c.SamplesPerS, c.Stats.GPUUtilPctMean)
		if c.Stats.GPUJobSMUtilPctMean > 0 {
			s += fmt.Sprintf(" (SM %.1f%%)", c.Stats.GPUJobSMUtilPctMean)
		}
		if c.Stats.GPUStatsOver == sensitivity.GPUStatsLaunch {
			s += "*"
		}
		return s
	})
}
