package sensitivity

import (
	"math"
	"sort"
)

// ModelBottleneck names the prediction FillPredicted makes.
const ModelBottleneck = "bottleneck-min"

// FillPredicted replaces every unmeasured cell of the grid with a
// prediction from the measured axes, using the bottleneck model
// throughput(c, m) = min(P(c), M(m)):
//   - P(c), samples/s at c cores with memory unlimited, read from the
//     measured CPU axis (linear between measured counts, clamped at the ends);
//   - M(m), samples/s at memory limit m, read from the memory axis (the best
//     measured cell at that limit, linear between limits); unlimited memory
//     does not bind.
//
// The memory axis is measured at the CPU count that maximises P, so where it
// is below P it measures the fetch-bound rate F(m), and where it is not, F(m)
// is at least max P, so min(P(c), M(m)) = min(P(c), F(m)) either way. A
// memory limit at which the job failed (OOM) predicts 0. A predicted cell's
// samples_per_s_ci95 is the interval of the measurement that binds.
func FillPredicted(p *Profile) {
	kept := p.Cells[:0]
	for _, c := range p.Cells {
		if c.Measured {
			kept = append(kept, c)
		}
	}
	p.Cells = kept

	type pt struct{ x, v, ci float64 }
	var cpuAxis []pt
	memBest := map[int64]pt{}
	memFailed := map[int64]bool{}
	for _, c := range p.Cells {
		switch {
		case Unlimited(c.MemLimitBytes) && c.Failure == nil && c.SamplesPerS > 0:
			cpuAxis = append(cpuAxis, pt{c.CPUs, c.SamplesPerS, c.SamplesPerSCI95})
		case !Unlimited(c.MemLimitBytes) && c.Failure != nil:
			memFailed[c.MemLimitBytes] = true
		case !Unlimited(c.MemLimitBytes):
			if b, ok := memBest[c.MemLimitBytes]; !ok || c.SamplesPerS > b.v {
				memBest[c.MemLimitBytes] = pt{float64(c.MemLimitBytes), c.SamplesPerS, c.SamplesPerSCI95}
			}
		}
	}
	if len(cpuAxis) == 0 {
		return // nothing to predict from
	}
	sort.Slice(cpuAxis, func(i, j int) bool { return cpuAxis[i].x < cpuAxis[j].x })
	var memAxis []pt
	for _, v := range memBest {
		memAxis = append(memAxis, v)
	}
	sort.Slice(memAxis, func(i, j int) bool { return memAxis[i].x < memAxis[j].x })

	interp := func(axis []pt, x float64) (v, ci float64) {
		if x <= axis[0].x {
			return axis[0].v, axis[0].ci
		}
		for k := 1; k < len(axis); k++ {
			if x <= axis[k].x {
				a, b := axis[k-1], axis[k]
				t := (x - a.x) / (b.x - a.x)
				return a.v + (b.v-a.v)*t, math.Max(a.ci, b.ci)
			}
		}
		last := axis[len(axis)-1]
		return last.v, last.ci
	}

	for _, c := range p.Axes.CPUs {
		for _, m := range p.Axes.MemLimitBytes {
			if p.Cell(c, m) != nil {
				continue
			}
			cell := Cell{CPUs: c, MemLimitBytes: m}
			pv, pci := interp(cpuAxis, c)
			cell.SamplesPerS, cell.SamplesPerSCI95 = pv, pci
			if !Unlimited(m) {
				if memFailed[m] {
					cell.SamplesPerS, cell.SamplesPerSCI95 = 0, 0
				} else if len(memAxis) > 0 {
					if mv, mci := interp(memAxis, float64(m)); mv < pv {
						cell.SamplesPerS, cell.SamplesPerSCI95 = mv, mci
					}
				}
			}
			p.Cells = append(p.Cells, cell)
		}
	}
	p.SortCells()
	if p.Fit == nil || p.Fit.Model == "" || p.Fit.Model == ModelBottleneck {
		p.Fit = &FitInfo{Model: ModelBottleneck}
	}
}
