package sensitivity

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Matrix is throughput over a rectangular grid of CPU and memory
// allocations. It is the form the scheduler reads: from a profile (absolute
// samples/s over cores and bytes), from the model zoo or from a Synergy grid
// (throughput normalised to the GPU-proportional share, over CPUs and bytes
// per GPU).
type Matrix struct {
	// CPUs is the CPU axis, ascending, in cores (or cores per GPU).
	CPUs []float64 `json:"cpus"`
	// MemBytes is the memory axis, ascending, in bytes (or bytes per GPU).
	MemBytes []float64 `json:"mem_bytes"`
	// Values[i][j] is the throughput at CPUs[i], MemBytes[j], in Unit.
	Values [][]float64 `json:"values"`
	// Measured[i][j] is true when the value was measured, not predicted.
	// It may be nil (nothing known about provenance).
	Measured [][]bool `json:"measured,omitempty"`
	// Unit names the throughput unit: "samples_per_s" or "normalized".
	Unit string `json:"unit"`
	// PerGPU is true when the axes are per GPU.
	PerGPU bool `json:"per_gpu"`
}

// Units of Matrix values.
const (
	UnitSamplesPerS = "samples_per_s"
	UnitNormalized  = "normalized"
)

// Validate checks shape, order and values.
func (m *Matrix) Validate() error {
	if len(m.CPUs) == 0 || len(m.MemBytes) == 0 {
		return errors.New("matrix: empty axis")
	}
	for i, c := range m.CPUs {
		if !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("matrix: cpus[%d] = %v is not a positive number", i, c)
		}
		if i > 0 && c <= m.CPUs[i-1] {
			return fmt.Errorf("matrix: cpus[%d] = %v is not ascending", i, c)
		}
	}
	for j, b := range m.MemBytes {
		if !(b > 0) || math.IsInf(b, 0) {
			return fmt.Errorf("matrix: mem_bytes[%d] = %v is not a positive number", j, b)
		}
		if j > 0 && b <= m.MemBytes[j-1] {
			return fmt.Errorf("matrix: mem_bytes[%d] = %v is not ascending", j, b)
		}
	}
	if len(m.Values) != len(m.CPUs) {
		return fmt.Errorf("matrix: %d rows of values for %d CPU values", len(m.Values), len(m.CPUs))
	}
	for i, row := range m.Values {
		if len(row) != len(m.MemBytes) {
			return fmt.Errorf("matrix: values[%d] has %d columns for %d memory values", i, len(row), len(m.MemBytes))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("matrix: values[%d][%d] = %v is not a non-negative number", i, j, v)
			}
		}
	}
	if m.Measured != nil && len(m.Measured) != len(m.CPUs) {
		return fmt.Errorf("matrix: measured has %d rows for %d CPU values", len(m.Measured), len(m.CPUs))
	}
	return nil
}

// At returns the throughput at (cpus, memBytes) by bilinear interpolation
// between grid points. Outside the grid it does not extrapolate: it clamps to
// the nearest edge and reports inRange=false so callers can say so.
func (m *Matrix) At(cpus, memBytes float64) (value float64, inRange bool) {
	i0, i1, ti, okc := bracket(m.CPUs, cpus)
	j0, j1, tj, okm := bracket(m.MemBytes, memBytes)
	v00, v01 := m.Values[i0][j0], m.Values[i0][j1]
	v10, v11 := m.Values[i1][j0], m.Values[i1][j1]
	a := v00 + (v01-v00)*tj
	b := v10 + (v11-v10)*tj
	return a + (b-a)*ti, okc && okm
}

// bracket finds the grid interval holding x: indices lo, hi and the
// fraction t in [0,1] between them. Outside the axis it clamps (t=0 at the
// nearest end) and reports ok=false.
func bracket(axis []float64, x float64) (lo, hi int, t float64, ok bool) {
	n := len(axis)
	if x <= axis[0] {
		return 0, 0, 0, x == axis[0]
	}
	if x >= axis[n-1] {
		return n - 1, n - 1, 0, x == axis[n-1]
	}
	hi = sort.SearchFloat64s(axis, x)
	if axis[hi] == x {
		return hi, hi, 0, true
	}
	lo = hi - 1
	return lo, hi, (x - axis[lo]) / (axis[hi] - axis[lo]), true
}

// Max returns the largest value and its coordinates.
func (m *Matrix) Max() (v, cpus, memBytes float64) {
	v = math.Inf(-1)
	for i, row := range m.Values {
		for j, x := range row {
			if x > v {
				v, cpus, memBytes = x, m.CPUs[i], m.MemBytes[j]
			}
		}
	}
	return v, cpus, memBytes
}

// Smallest returns the cheapest grid point whose value reaches frac of the
// best: fewest CPUs first, then least memory. It is how "the smallest CPU
// and memory that reach 95% of the best throughput" is read off a matrix.
func (m *Matrix) Smallest(frac float64) (cpus, memBytes float64) {
	best, _, _ := m.Max()
	target := best * frac
	for i, row := range m.Values {
		for j, x := range row {
			if x >= target {
				return m.CPUs[i], m.MemBytes[j]
			}
		}
	}
	return m.CPUs[len(m.CPUs)-1], m.MemBytes[len(m.MemBytes)-1]
}

// Normalized returns a copy divided by the value at (cpus, memBytes): the
// Synergy convention where the GPU-proportional share is 1.0.
func (m *Matrix) Normalized(cpus, memBytes float64) (Matrix, error) {
	ref, _ := m.At(cpus, memBytes)
	if !(ref > 0) {
		return Matrix{}, fmt.Errorf("matrix: throughput at the reference point (cpus=%v, mem_bytes=%v) is %v; cannot normalise", cpus, memBytes, ref)
	}
	out := Matrix{
		CPUs:     append([]float64(nil), m.CPUs...),
		MemBytes: append([]float64(nil), m.MemBytes...),
		Values:   make([][]float64, len(m.Values)),
		Measured: m.Measured,
		Unit:     UnitNormalized,
		PerGPU:   m.PerGPU,
	}
	for i, row := range m.Values {
		out.Values[i] = make([]float64, len(row))
		for j, x := range row {
			out.Values[i][j] = x / ref
		}
	}
	return out, nil
}

// Matrix builds the grid of a profile's axes. Memory limit 0 (unlimited)
// stands at the host's DRAM. A cell with no successful value (missing or
// failed) is an error naming it: fit the profile first (Fill).
func (p *Profile) Matrix() (Matrix, error) {
	if len(p.Axes.CPUs) == 0 || len(p.Axes.MemLimitBytes) == 0 {
		return Matrix{}, errors.New("profile: axes are empty")
	}
	m := Matrix{Unit: UnitSamplesPerS, CPUs: append([]float64(nil), p.Axes.CPUs...)}
	for _, b := range p.Axes.MemLimitBytes {
		x := float64(b)
		if Unlimited(b) {
			x = float64(p.Host.DRAMBytes)
			if x <= 0 {
				return Matrix{}, errors.New("profile: host.dram_bytes is needed to place the unlimited memory column")
			}
		}
		m.MemBytes = append(m.MemBytes, x)
	}
	m.Values = make([][]float64, len(m.CPUs))
	m.Measured = make([][]bool, len(m.CPUs))
	for i, c := range m.CPUs {
		m.Values[i] = make([]float64, len(m.MemBytes))
		m.Measured[i] = make([]bool, len(m.MemBytes))
		for j, b := range p.Axes.MemLimitBytes {
			cell := p.Cell(c, b)
			if cell == nil {
				return Matrix{}, fmt.Errorf("profile: no cell at cpus=%v mem_limit_bytes=%d", c, b)
			}
			if cell.Failure != nil {
				// A failed point ran at zero throughput: OOM at that
				// limit is a real finding, not a hole.
				m.Values[i][j] = 0
			} else {
				m.Values[i][j] = cell.SamplesPerS
			}
			m.Measured[i][j] = cell.Measured
		}
	}
	if err := m.Validate(); err != nil {
		return Matrix{}, err
	}
	return m, nil
}
