package sensitivity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The demand rule: how a profile's grid is read when a job's ideal
// allocation is decided (AtFairShare, SmallestAllocation). A measured grid
// is not the zoo's noiseless table: every cell carries a 95% interval, a
// cell may have been measured beside other work on the host, and the
// unlimited memory column is no amount of memory the job needs. The rule
// reads the grid through all three; on a noiseless grid (every interval 0,
// no interference, no recorded footprint) it gives exactly the answers the
// rule gave before it read them.

// InterferenceCores is how much CPU, in cores on average, work other than
// the job may use on the host while a point runs before the point counts
// as measured beside other work: the profile warns about it (the
// profiler's interference note) and a demand does not rest on it alone. On
// a shared 2-core VM, a point's figure moved by up to a fifth between
// repeats of the same runner with a third of a core of other work, both
// when that work took the job's own cores (a data-bound 2-core point got
// 1.41-1.51 of its 2) and when it ran beside a 1-core point on the other
// core (the job's CPU time bought 141-169 samples/s per core):
// docs/pytorch.md.
const InterferenceCores = 0.25

// OtherWorkCores is the CPU, in cores, that the host spent on other work
// while a point ran: its busy share of all logical CPUs minus the job's
// own use. ok=false when either was not sampled.
func OtherWorkCores(st *PointStats, logicalCPUs int) (cores float64, ok bool) {
	if st == nil || !(st.HostCPUPctMean > 0) || !(st.CPUCoresMean > 0) || logicalCPUs <= 0 {
		return 0, false
	}
	return max(0, st.HostCPUPctMean/100*float64(logicalCPUs)-st.CPUCoresMean), true
}

// Interfered reports whether c was measured beside more than
// InterferenceCores of other work on p's host (the cells the profile's
// interference warnings name).
func (p *Profile) Interfered(c *Cell) bool {
	if c == nil || !c.Measured || c.Failure != nil {
		return false
	}
	other, ok := OtherWorkCores(c.Stats, p.Host.LogicalCPUs)
	return ok && other > InterferenceCores
}

// UnlimitedMemBytes is the memory the job used at the unlimited column:
// its own footprint (job.footprint_bytes: anonymous memory and framework
// page cache, measured with its dataset's pages charged elsewhere) plus
// the page cache its dataset took (host.dataset_bytes, all of it, as
// nothing limited it), at most the host's DRAM. Without a recorded
// footprint, the largest peak a measured unlimited cell's cgroup reached
// stands for it (an upper bound: that peak may already hold dataset
// pages). 0 when the profile records neither (the column then stands at
// the host's DRAM, as before footprints were recorded); how says which.
func (p *Profile) UnlimitedMemBytes() (bytes int64, how string) {
	own, what := p.Job.FootprintBytes, "footprint"
	if own <= 0 {
		own, what = 0, "peak"
		for _, c := range p.Cells {
			if c.Measured && c.Failure == nil && Unlimited(c.MemLimitBytes) && c.Stats != nil {
				own = max(own, c.Stats.MemPeakBytes)
			}
		}
	}
	if own <= 0 {
		return 0, ""
	}
	data := max(p.Host.DatasetBytes, 0)
	used := own + data
	if used < 0 || (p.Host.DRAMBytes > 0 && used > p.Host.DRAMBytes) { // overflow or above the host
		used = p.Host.DRAMBytes
	}
	return used, fmt.Sprintf("what it used unlimited: %s %s + dataset %s", what, gb(float64(own)), gb(float64(data)))
}

// demandGrid is a profile's grid as the demand rule reads it.
type demandGrid struct {
	// m is the grid in samples/s, the unlimited column at what the job
	// used there (UnlimitedMemBytes), and a cell measured beside other work
	// read as at least the quiet cells it dominates (below).
	m Matrix
	// ci[i][j] is the 95% half-width of m.Values[i][j] in samples/s: the
	// cell's samples_per_s_ci95 (for a predicted cell, the interval of the
	// measurement its prediction rests on: docs/profile-format.md); for a
	// cell measured beside other work, its whole value (unknown, as a
	// wall_clock figure's).
	ci [][]float64
	// interfered[i][j]: the cell was measured beside other work, or is
	// predicted in the row or column of such a cell (the measurements a
	// prediction rests on); up[i][j] is then the most it can be: twice its
	// figure (its interval unknown), and no more than any quiet cell with
	// at least its CPUs and memory.
	interfered [][]bool
	up         [][]float64
	// note says which cells were read otherwise than their figure.
	note string
	// unlimited: the last memory column is the unlimited one; memHow says
	// where it stands ("" at the host's DRAM).
	unlimited bool
	memHow    string
}

// demandGrid builds p's grid for the demand rule. A cell the profile warns
// was measured beside other work (Interfered) does not decide a demand on
// its own. Its figure is a lower bound of the job's on a quiet host (other
// work takes CPU time from the job, never gives it), so it is read as at
// least the best quiet cell it dominates (no more CPUs and no more memory:
// the job with more of both is not slower), its interval as unknown (±its
// value, as a wall_clock figure's), so that no fallback to the share rests
// on it, and it fails the 95% bar only where even the most it can be (up)
// falls short: a slow figure beside other work does not alone push a
// demand up. A predicted cell in the row or column of such a cell rests on
// it and is read the same way.
func (p *Profile) demandGrid() (*demandGrid, error) {
	m, err := p.Matrix()
	if err != nil {
		return nil, err
	}
	g := &demandGrid{m: m}
	named := g.markInterfered(p)
	raised := g.readBeside(p.Axes.MemLimitBytes)
	if len(named) > 0 {
		g.note = "measured beside other work on the host, so lower bounds with unknown intervals (and the predicted cells in their rows and columns): " + strings.Join(named, ", ")
		if len(raised) > 0 {
			g.note += "; read " + strings.Join(raised, ", ") + ", which they cannot be slower than"
		}
	}
	g.placeUnlimited(p)
	return g, nil
}

// markInterfered fills g.ci and g.interfered from p's cells and names the
// cells measured beside other work.
func (g *demandGrid) markInterfered(p *Profile) (named []string) {
	m := &g.m
	rows, cols := len(m.CPUs), len(m.MemBytes)
	g.ci, g.interfered, g.up = make([][]float64, rows), make([][]bool, rows), make([][]float64, rows)
	beside := make([][]bool, rows)
	rowHit, colHit := make([]bool, rows), make([]bool, cols)
	for i, c := range m.CPUs {
		g.ci[i], g.interfered[i], g.up[i], beside[i] = make([]float64, cols), make([]bool, cols), make([]float64, cols), make([]bool, cols)
		for j, b := range p.Axes.MemLimitBytes {
			cell := p.Cell(c, b)
			if cell.Failure == nil {
				g.ci[i][j] = cell.SamplesPerSCI95
			}
			if p.Interfered(cell) {
				beside[i][j], rowHit[i], colHit[j] = true, true, true
				named = append(named, fmt.Sprintf("cpus=%g mem=%s", c, memLimitText(b)))
			}
		}
	}
	for i := range beside {
		for j := range beside[i] {
			g.interfered[i][j] = beside[i][j] || (!m.Measured[i][j] && (rowHit[i] || colHit[j]))
		}
	}
	return named
}

// readBeside reads each interfered cell as at least the best quiet cell it
// dominates, its interval unknown, and sets every cell's up (the most it
// can be); it names the cells it raised.
func (g *demandGrid) readBeside(limits []int64) (raised []string) {
	m := &g.m
	for i := range m.CPUs {
		for j := range m.MemBytes {
			if !g.interfered[i][j] {
				continue
			}
			floor, fi, fj := -1.0, 0, 0
			for k := 0; k <= i; k++ {
				for l := 0; l <= j; l++ {
					if !g.interfered[k][l] && m.Values[k][l] > floor {
						floor, fi, fj = m.Values[k][l], k, l
					}
				}
			}
			if floor > m.Values[i][j] {
				m.Values[i][j] = floor
				raised = append(raised, fmt.Sprintf("cpus=%g mem=%s as the %s samples/s of cpus=%g mem=%s",
					m.CPUs[i], memLimitText(limits[j]), num3(floor), m.CPUs[fi], memLimitText(limits[fj])))
			}
			g.ci[i][j] = m.Values[i][j]
		}
	}
	for i := range m.CPUs {
		for j := range m.MemBytes {
			g.up[i][j] = m.Values[i][j]
			if !g.interfered[i][j] {
				continue
			}
			up := 2 * m.Values[i][j]
			for k := i; k < len(m.CPUs); k++ {
				for l := j; l < len(m.MemBytes); l++ {
					if !g.interfered[k][l] {
						up = min(up, max(m.Values[k][l], m.Values[i][j]))
					}
				}
			}
			g.up[i][j] = up
		}
	}
	return raised
}

// placeUnlimited stands the unlimited column, if any, at what the job used
// there (UnlimitedMemBytes) when the profile records it.
func (g *demandGrid) placeUnlimited(p *Profile) {
	m := &g.m
	last := len(m.MemBytes) - 1
	if g.unlimited = Unlimited(p.Axes.MemLimitBytes[last]); !g.unlimited {
		return
	}
	used, how := p.UnlimitedMemBytes()
	if used <= 0 {
		return
	}
	at := float64(used)
	if last > 0 && at <= m.MemBytes[last-1] {
		// It used no more than the largest limit, at which it read slower
		// (measured cold): the column stands just above it.
		at = m.MemBytes[last-1] + 1
	}
	if at < m.MemBytes[last] {
		m.MemBytes[last], g.memHow = at, how
	}
}

// smallest is the ideal cell of the grid whose values are vals (g.m's, or
// g.m's normalised: scale is what they were divided by): the first, fewest
// CPUs then least memory, reaching frac of the best value, a cell read
// beside other work where the most it can be does. With no such cell it
// is Matrix.Smallest exactly.
func (g *demandGrid) smallest(vals [][]float64, scale, frac float64) (i, j int) {
	best := math.Inf(-1)
	for _, row := range vals {
		for _, x := range row {
			best = max(best, x)
		}
	}
	target := best * frac
	for i, row := range vals {
		for j, x := range row {
			if x >= target || (g.interfered[i][j] && g.up[i][j]/scale >= target) {
				return i, j
			}
		}
	}
	return len(vals) - 1, len(vals[0]) - 1
}

// perGPU divides the grid's axes by the job's GPUs.
func (g *demandGrid) perGPU(gpus int) {
	for i := range g.m.CPUs {
		g.m.CPUs[i] /= float64(gpus)
	}
	for i := range g.m.MemBytes {
		g.m.MemBytes[i] /= float64(gpus)
	}
	g.m.PerGPU = true
}

// ciAt is the 95% half-width of g.m.At(cpus, memBytes): the cells'
// half-widths interpolated as the value is. The half-width of a weighted
// mean of independent estimates is at most the weighted mean of their
// half-widths, so this bounds the interpolated value's from above.
func (g *demandGrid) ciAt(cpus, memBytes float64) float64 {
	h := Matrix{CPUs: g.m.CPUs, MemBytes: g.m.MemBytes, Values: g.ci}
	v, _ := h.At(cpus, memBytes)
	return v
}

// measurablySlower reports whether a figure a (95% half-width ha) is
// slower than b (half-width hb) beyond the noise of both: b − a above the
// two intervals combined, ha + hb, so that the intervals do not overlap.
// That is the conservative reading of two confidence intervals (Schenker &
// Gentleman, "On judging the significance of differences by examining the
// overlap between confidence intervals", The American Statistician 55(3),
// 2001): for two independent estimates of the same value, two 95%
// intervals of equal width fail to overlap with probability about 0.6%
// (|z| > 1.96·√2), where the two-sample test on the difference,
// sqrt(ha² + hb²), says "different" 5% of the time. A demand read off a
// profile should not change when the same job is profiled again, so the
// rule asks for the stricter evidence. With both half-widths 0 (a
// noiseless matrix), any a < b is slower. diff is b − a and comb the
// combined half-width.
func measurablySlower(a, ha, b, hb float64) (slower bool, diff, comb float64) {
	diff, comb = b-a, ha+hb
	return a < b && diff > comb, diff, comb
}

// pct formats a fraction as a whole percentage ("12 %"), with one decimal
// below 10.
func pct(x float64) string {
	x *= 100
	if math.Abs(x) < 10 {
		return strconv.FormatFloat(x, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(x, 'f', 0, 64) + " %"
}

// num3 formats a throughput with three significant figures or whole units.
func num3(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func cpusText(c float64) string {
	s := strconv.FormatFloat(c, 'g', 4, 64)
	if c == 1 {
		return s + " CPU"
	}
	return s + " CPUs"
}

// memLimitText is a memory limit as the profile's warnings write it:
// "unlimited", whole MiB or GiB, else GB.
func memLimitText(b int64) string {
	switch {
	case Unlimited(b):
		return "unlimited"
	case b%(1<<30) == 0:
		return strconv.FormatInt(b>>30, 10) + "GiB"
	case b%(1<<20) == 0:
		return strconv.FormatInt(b>>20, 10) + "MiB"
	}
	return gb(float64(b))
}

// allocText is a per-GPU allocation as the reasons name it.
func allocText(cpus, memBytes float64) string { return cpusText(cpus) + ", " + gb(memBytes) }

// idealWhy explains the ideal allocation (i, j) of a per-GPU grid whose
// best is best: which smaller allocation read slower than 95% of the best,
// and by how much against its noise.
func (g *demandGrid) idealWhy(i, j int, best, bestCI float64) string {
	var parts []string
	slower := func(k, l int, what string) {
		v, h := g.m.Values[k][l], g.ci[k][l]
		if v == 0 {
			parts = append(parts, what+" reads 0 samples/s (a failed point)")
			return
		}
		_, diff, comb := measurablySlower(v, h, best, bestCI)
		rel := "beyond"
		if diff <= comb {
			rel = "within"
		}
		parts = append(parts, fmt.Sprintf("%s reads %s slower than the best (%s their ±%s)", what, pct(diff/best), rel, pct(comb/best)))
	}
	if i > 0 {
		// No cell of the row below reaches the bar: name its best.
		k, l := i-1, 0
		for x := range g.m.Values[k] {
			if g.m.Values[k][x] > g.m.Values[k][l] {
				l = x
			}
		}
		what := cpusText(g.m.CPUs[k])
		if len(g.m.MemBytes) > 1 {
			what += " (at its best memory)"
		}
		slower(k, l, what)
	}
	if j > 0 {
		slower(i, j-1, gb(g.m.MemBytes[j-1]))
	}
	if len(parts) == 0 {
		return "the smallest profiled allocation reaches 95 % of the best"
	}
	return strings.Join(parts, "; ")
}
