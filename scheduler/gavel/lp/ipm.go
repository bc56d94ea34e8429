package lp

import (
	"errors"
	"fmt"
	"math"
)

// structLP is the one LP shape that every Gavel policy in this package reduces to.
// Variables: x[m][j] >= 0 for n jobs and k worker types, and optionally one z >= 0.
//
//	maximise  sum_mj g[m][j]*x[m][j] + (hasZ ? z : 0)
//	s.t.      sum_j x[m][j]                    <= 1      (row R_m, every job)
//	          sum_m a[m]*x[m][j]                <= 1      (capacity K_j; a[m] = scale_factor/num_workers[j])
//	          sum_j c[m][j]*x[m][j] - z         >= b[m]   (demand Q_m, only where dem[m]; "- z" only with hasZ)
//
// The capacity rows are scaled by num_workers, so that every right-hand side is 1.
type structLP struct {
	n, k int
	a    []float64 // n*k: scale_factor[m] / num_workers[j]
	g    []float64 // n*k objective (maximise), nil = 0
	hasZ bool
	zc   []float64 // n: z's coefficient in each demand row (row equilibration); nil = all 1
	dem  []bool    // n
	c    []float64 // n*k demand coefficients
	b    []float64 // n demand right-hand sides
	// gapTol, when > 0, replaces ipmTol for the relative duality gap (water filling: its frozen
	// rows have singular blocks that no z column makes whole, and the gap stalls near 1e-7
	// while both feasibilities reach 1e-16).
	gapTol float64
	// maxIter, when > 0, caps the iterations of one solve and turns off the retries at larger
	// regularisations: the caller takes the best point reached.
	maxIter int
	// centre asks for centring steps after convergence (centre.go): the end point is moved to
	// near the analytic centre of the optimal face.
	centre bool
}

// ipmResult is an optimal primal solution and the objective values that certify it.
type ipmResult struct {
	x          []float64 // n*k
	z          float64
	primalObj  float64 // maximised objective, primal
	dualObj    float64 // the dual bound (>= primalObj up to the tolerance)
	iterations int
	// sQ and lamQ are, per demand row, the primal slack and its dual (the reduced cost of the
	// slack, >= 0); nil without demand rows. Water filling reads bottlenecks from them.
	sQ, lamQ []float64
	// centringSteps counts the centring steps taken after convergence (structLP.centre).
	centringSteps int
}

// colVec holds one value per LP column (variables and slacks); rowVec one per constraint row.
// The columns that exist lie contiguously in all, as [x | sR | sK | sQ (with demand rows) |
// z (with z)], so that element-wise steps are plain loops; x, sR, sK, sQ and z are views into it
// (sQ and z are zero-filled stand-ins outside all when the LP has no demand rows or no z).
type colVec struct {
	all        []float64
	x          []float64
	z          []float64 // one element
	sR, sQ, sK []float64
}

type rowVec struct {
	R, Q, K []float64
}

func newCol(p *structLP) colVec {
	n, k := p.n, p.k
	all := make([]float64, p.numCols())
	v := colVec{all: all}
	v.x, all = all[:n*k], all[n*k:]
	v.sR, all = all[:n], all[n:]
	v.sK, all = all[:k], all[k:]
	if p.anyDem() {
		v.sQ, all = all[:n], all[n:]
	} else {
		v.sQ = make([]float64, n)
	}
	if p.hasZ {
		v.z = all[:1]
	} else {
		v.z = make([]float64, 1)
	}
	return v
}

func newRow(n, k int) rowVec {
	return rowVec{R: make([]float64, n), Q: make([]float64, n), K: make([]float64, k)}
}

// ipmTol is the relative primal/dual infeasibility and duality-gap tolerance of the interior-point method.
const ipmTol = 1e-10

// errNotConverged is returned when the interior-point method ends without an optimal point.
var errNotConverged = errors.New("lp: interior-point method did not converge")

// mulA computes A*v (one value per row) for the standard form in which every constraint is an
// equality with its own slack: R: sum x + sR = 1; Q: -c.x + z + sQ = -b; K: sum a x + sK = 1.
func (p *structLP) mulA(v colVec, out rowVec) {
	n, k := p.n, p.k
	for j := 0; j < k; j++ {
		out.K[j] = v.sK[j]
	}
	for m := 0; m < n; m++ {
		row := v.x[m*k : (m+1)*k]
		r, q := v.sR[m], 0.0
		for j, xv := range row {
			r += xv
			out.K[j] += p.a[m*k+j] * xv
			if p.dem[m] {
				q -= p.c[m*k+j] * xv
			}
		}
		out.R[m] = r
		if p.dem[m] {
			if p.hasZ {
				q += p.zCoef(m) * v.z[0]
			}
			out.Q[m] = q + v.sQ[m]
		} else {
			out.Q[m] = 0
		}
	}
}

// mulAT computes A^T*y (one value per column).
func (p *structLP) mulAT(y rowVec, out colVec) {
	n, k := p.n, p.k
	z := 0.0
	for m := 0; m < n; m++ {
		for j := 0; j < k; j++ {
			v := y.R[m] + p.a[m*k+j]*y.K[j]
			if p.dem[m] {
				v -= p.c[m*k+j] * y.Q[m]
			}
			out.x[m*k+j] = v
		}
		out.sR[m] = y.R[m]
		if p.dem[m] {
			out.sQ[m] = y.Q[m]
			z += p.zCoef(m) * y.Q[m]
		} else {
			out.sQ[m] = 0
		}
	}
	if p.hasZ {
		out.z[0] = z
	}
	copy(out.sK, y.K)
}

// cost returns the minimisation objective coefficients f (f = -g, and -1 for z).
func (p *structLP) cost(out colVec) {
	for i := range out.x {
		out.x[i] = 0
		if p.g != nil {
			out.x[i] = -p.g[i]
		}
	}
	out.z[0] = 0
	if p.hasZ {
		out.z[0] = -1
	}
	clear(out.sR)
	clear(out.sQ)
	clear(out.sK)
}

// rhs returns the right-hand side of the standard form.
func (p *structLP) rhs(out rowVec) {
	for m := 0; m < p.n; m++ {
		out.R[m] = 1
		out.Q[m] = 0
		if p.dem[m] {
			out.Q[m] = -p.b[m]
		}
	}
	for j := range out.K {
		out.K[j] = 1
	}
}

// numCols counts the columns that exist.
func (p *structLP) numCols() int {
	c := p.n*p.k + p.n + p.k
	if p.anyDem() {
		c += p.n
	}
	if p.hasZ {
		c++
	}
	return c
}

// anyDem says whether the LP has demand rows (then every job has one: check enforces it).
func (p *structLP) anyDem() bool { return p.n > 0 && p.dem[0] }

// zCoef returns z's coefficient in demand row m.
func (p *structLP) zCoef(m int) float64 {
	if p.zc == nil {
		return 1
	}
	return p.zc[m]
}

// equilibrate divides every demand row (coefficients, right-hand side and z's coefficient) by
// its largest coefficient, which leaves the LP unchanged and its rows comparable in scale.
func (p *structLP) equilibrate() {
	p.zc = make([]float64, p.n)
	for m := 0; m < p.n; m++ {
		row := p.c[m*p.k : (m+1)*p.k]
		s := infNorm(row)
		p.zc[m] = 1
		if !p.dem[m] || s == 0 {
			continue
		}
		for j := range row {
			row[j] /= s
		}
		p.b[m] /= s
		p.zc[m] = 1 / s
	}
}

func (p *structLP) check() error {
	if len(p.a) != p.n*p.k || len(p.dem) != p.n || len(p.c) != p.n*p.k || len(p.b) != p.n ||
		(p.zc != nil && len(p.zc) != p.n) {
		return fmt.Errorf("lp: internal: inconsistent problem sizes")
	}
	for _, d := range p.dem {
		if d != p.anyDem() {
			return fmt.Errorf("lp: internal: demand rows must be on every job or none")
		}
	}
	if p.g != nil && len(p.g) != p.n*p.k {
		return fmt.Errorf("lp: internal: objective size")
	}
	return nil
}

func infNorm(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		if a := math.Abs(x); a > m {
			m = a
		}
	}
	return m
}
