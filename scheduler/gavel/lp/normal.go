package lp

import (
	"fmt"
	"math"
)

// normalEq factors and solves the interior-point normal equations (A·D·Aᵀ)·Δy = h of a structLP
// in O(n·k²) time and O(n·k) memory, without ever forming the (2n+k)-square matrix.
//
// Ordered as [job rows | capacity rows], A·D·Aᵀ = [[H, C], [Cᵀ, G]] where
//   - H = B + d_z·q·qᵀ: B is block diagonal, one 2×2 block per job (its row R_m and demand Q_m;
//     1×1 when the job has no demand row), and the z column couples every demand row (rank one);
//   - C (n blocks of 2×k) couples a job's rows with the capacity rows of the types it may use;
//   - G is diagonal (capacity rows share no column with one another).
//
// Block elimination: S = G − Cᵀ·H⁻¹·C is k×k; H⁻¹ is B⁻¹ with a Sherman–Morrison correction for z.
// So each interior-point iteration costs O(n·k²), against O((n·k)³) for a dense factorisation.
type normalEq struct {
	p                *structLP
	d                colVec    // D = u/w of the current iterate
	i00, i01, i11    []float64 // B_m⁻¹ per job
	er, eq           []float64 // E = B⁻¹C, n*k each (R and Q rows)
	e                []float64 // qᵀE (k)
	qBq              float64   // qᵀB⁻¹q
	reg              float64   // relative regularisation of the job blocks (see eliminateDemandJob)
	alpha, beta      []float64 // regularised slack weights of each job block
	s                []float64 // G − CᵀB⁻¹C (k*k), then the reduced system K (g*g, g = k or k+1), LU-factored
	lu               []float64
	piv              []int
	r2, y2, scratchK []float64
}

func newNormalEq(p *structLP) *normalEq {
	n, k := p.n, p.k
	return &normalEq{
		p: p, i00: make([]float64, n), i01: make([]float64, n), i11: make([]float64, n),
		alpha: make([]float64, n), beta: make([]float64, n), er: make([]float64, n*k), eq: make([]float64, n*k), e: make([]float64, k),
		s: make([]float64, k*k), lu: make([]float64, (k+1)*(k+1)), piv: make([]int, k+1),
		r2: make([]float64, k+1), y2: make([]float64, k+1), scratchK: make([]float64, k),
	}
}

// factor prepares the solves for D = d (a column vector of u/w).
//
// Near the optimum D spans many orders of magnitude, and the textbook products (B⁻¹ from
// B11·B22 − B12², S as G minus a correction) cancel catastrophically. So every quantity is
// written as a sum of non-negative terms (Cauchy–Binet for the 2×2 determinants; the
// matrix-determinant lemma for S's diagonal), in which the largest d_j never multiplies itself.
// With v_j = (1, −c_j), α = d(sR), β = d(sQ):
//
//	det B      = Σ_{i<l} d_i d_l (c_i − c_l)² + α Σ d_i c_i² + β Σ d_i + αβ
//	S_m[j][j]  = a_j² d_j det(B without column j) / det B
//	S_m[j][l]  = −a_j a_l d_j d_l (Σ_{i≠j,l} d_i (c_i − c_j)(c_i − c_l) + β + α c_j c_l) / det B
//
// and S = Σ_m S_m + diag(d(sK)) + γ·e·eᵀ is a sum of positive semidefinite parts.
func (ne *normalEq) factor(d colVec) error {
	p, k := ne.p, ne.p.k
	ne.d = d
	clear(ne.s)
	clear(ne.e)
	qBq := 0.0
	for m := 0; m < p.n; m++ {
		if p.dem[m] {
			zc := p.zCoef(m)
			qBq += zc * zc * ne.eliminateDemandJob(m, zc)
		} else {
			ne.eliminatePlainJob(m)
		}
	}
	for j := 0; j < k; j++ {
		ne.s[j*k+j] += d.sK[j]
	}
	ne.qBq = qBq
	return ne.factorReduced()
}

// factorReduced builds and LU-factors the reduced system. Without z it is S (k×k). With z the
// rank-one coupling is kept as an extra unknown ζ = d_z·qᵀΔy instead of a Sherman–Morrison
// update (which cancels catastrophically once d_z·qᵀB⁻¹q ≫ 1):
//
//	[ S    −e              ] [Δy_K]   [h_K − Cᵀ·B⁻¹h_J]
//	[ −eᵀ  −(qᵀB⁻¹q + 1/d_z)] [ ζ  ] = [ −qᵀ·B⁻¹h_J    ]
//
// a (#types+1)-square quasi-definite system, solved by Gaussian elimination with partial pivoting.
func (ne *normalEq) factorReduced() error {
	k := ne.p.k
	g := k
	if ne.p.hasZ {
		g = k + 1
	}
	lu := ne.lu[:g*g]
	for j := 0; j < k; j++ {
		copy(lu[j*g:j*g+k], ne.s[j*k:(j+1)*k])
	}
	if ne.p.hasZ {
		for j := 0; j < k; j++ {
			lu[j*g+k] = -ne.e[j]
			lu[k*g+j] = -ne.e[j]
		}
		lu[k*g+k] = -(ne.qBq + 1/ne.d.z[0])
	}
	return luFactor(lu, ne.piv[:g], g)
}

// detB returns det of job m's 2×2 block with column skip (−1: none) left out.
func (ne *normalEq) detB(m, skip int) float64 {
	p, k, d := ne.p, ne.p.k, ne.d
	alpha, beta := ne.alpha[m], ne.beta[m]
	c := p.c[m*k : (m+1)*k]
	dx := d.x[m*k : (m+1)*k]
	det := alpha * beta
	for i := 0; i < k; i++ {
		if i == skip {
			continue
		}
		det += dx[i] * (alpha*c[i]*c[i] + beta)
		for l := i + 1; l < k; l++ {
			if l != skip {
				diff := c[i] - c[l]
				det += dx[i] * dx[l] * diff * diff
			}
		}
	}
	return det
}

// eliminateDemandJob adds S_m for a job with a demand row, stores B_m⁻¹ and E_m = B_m⁻¹C_m,
// and returns (B_m⁻¹)_QQ. zc is z's coefficient in the job's demand row.
func (ne *normalEq) eliminateDemandJob(m int, zc float64) float64 {
	p, k, d := ne.p, ne.p.k, ne.d
	alpha, beta := d.sR[m], d.sQ[m]
	c := p.c[m*k : (m+1)*k]
	dx := d.x[m*k : (m+1)*k]
	a := p.a[m*k : (m+1)*k]
	b11, b12, b22 := alpha, 0.0, beta
	for i := 0; i < k; i++ {
		b11 += dx[i]
		b12 -= dx[i] * c[i]
		b22 += dx[i] * c[i] * c[i]
	}
	// Regularisation: a bottleneck job (row and demand both tight, one basic x) has a nearly
	// singular block that only the z column makes whole. Adding δ to both slack weights keeps
	// B_m⁻¹ representable; the caller's iterative refinement removes the perturbation.
	delta := ne.reg * (b11 + b22)
	alpha, beta = alpha+delta, beta+delta
	b11, b22 = b11+delta, b22+delta
	ne.alpha[m], ne.beta[m] = alpha, beta
	det := ne.detB(m, -1)
	ne.i00[m], ne.i01[m], ne.i11[m] = b22/det, -b12/det, b11/det
	for j := 0; j < k; j++ {
		er, eq := beta, -alpha*c[j]
		for i := 0; i < k; i++ {
			if i != j {
				er += dx[i] * c[i] * (c[i] - c[j])
				eq += dx[i] * (c[i] - c[j])
			}
		}
		ne.er[m*k+j] = dx[j] * a[j] * er / det
		ne.eq[m*k+j] = dx[j] * a[j] * eq / det
		ne.e[j] += zc * ne.eq[m*k+j]
		ne.s[j*k+j] += a[j] * a[j] * dx[j] * ne.detB(m, j) / det
		for l := j + 1; l < k; l++ {
			v := beta + alpha*c[j]*c[l]
			for i := 0; i < k; i++ {
				if i != j && i != l {
					v += dx[i] * (c[i] - c[j]) * (c[i] - c[l])
				}
			}
			v *= -a[j] * a[l] * dx[j] * dx[l] / det
			ne.s[j*k+l] += v
			ne.s[l*k+j] += v
		}
	}
	return ne.i11[m]
}

// eliminatePlainJob does the same for a job with only its row constraint (B_m is 1×1).
func (ne *normalEq) eliminatePlainJob(m int) {
	p, k, d := ne.p, ne.p.k, ne.d
	dx := d.x[m*k : (m+1)*k]
	a := p.a[m*k : (m+1)*k]
	b := d.sR[m]
	for _, v := range dx {
		b += v
	}
	ne.i00[m], ne.i01[m], ne.i11[m] = 1/b, 0, 0
	for j := 0; j < k; j++ {
		ne.er[m*k+j] = dx[j] * a[j] / b
		ne.eq[m*k+j] = 0
		rest := d.sR[m]
		for i, v := range dx {
			if i != j {
				rest += v
			}
		}
		ne.s[j*k+j] += a[j] * a[j] * dx[j] * rest / b
		for l := j + 1; l < k; l++ {
			v := -a[j] * a[l] * dx[j] * dx[l] / b
			ne.s[j*k+l] += v
			ne.s[l*k+j] += v
		}
	}
}

// solve returns y with (A·D·Aᵀ)·y = h, for the D of the last factor call. h and y may alias.
func (ne *normalEq) solve(h, y rowVec) {
	p, k := ne.p, ne.p.k
	g := k
	if p.hasZ {
		g = k + 1
	}
	// v = B⁻¹·h_J (kept in y), r2 = h_K − Cᵀ·v, r2[k] = −qᵀ·v.
	copy(ne.r2, h.K)
	ne.r2[k] = 0
	for m := 0; m < p.n; m++ {
		vR := ne.i00[m]*h.R[m] + ne.i01[m]*h.Q[m]
		vQ := ne.i01[m]*h.R[m] + ne.i11[m]*h.Q[m]
		y.R[m], y.Q[m] = vR, vQ
		ne.r2[k] -= p.zCoef(m) * vQ
		for j := 0; j < k; j++ {
			dx := ne.d.x[m*k+j]
			a := p.a[m*k+j]
			v := dx * a * vR
			if p.dem[m] {
				v -= dx * p.c[m*k+j] * a * vQ
			}
			ne.r2[j] -= v
		}
	}
	luSolve(ne.lu[:g*g], ne.piv[:g], g, ne.r2[:g], ne.y2[:g])
	zeta := 0.0
	if p.hasZ {
		zeta = ne.y2[k]
	}
	// y_J = v − E·y_K − p·ζ with p_m = B_m⁻¹q_m = (i01, i11).
	for m := 0; m < p.n; m++ {
		zm := p.zCoef(m) * zeta
		fr, fq := ne.i01[m]*zm, ne.i11[m]*zm
		for j := 0; j < k; j++ {
			fr += ne.er[m*k+j] * ne.y2[j]
			fq += ne.eq[m*k+j] * ne.y2[j]
		}
		y.R[m] -= fr
		y.Q[m] -= fq
		if !p.dem[m] {
			y.Q[m] = 0
		}
	}
	copy(y.K, ne.y2[:k])
}

// luFactor factors the g×g matrix a in place with partial pivoting (Doolittle, row swaps in piv).
func luFactor(a []float64, piv []int, g int) error {
	for i := range piv {
		piv[i] = i
	}
	for c := 0; c < g; c++ {
		best, bi := math.Abs(a[c*g+c]), c
		for r := c + 1; r < g; r++ {
			if v := math.Abs(a[r*g+c]); v > best {
				best, bi = v, r
			}
		}
		if best == 0 || math.IsNaN(best) || math.IsInf(best, 0) {
			return fmt.Errorf("lp: normal equations: singular or non-finite reduced system")
		}
		if bi != c {
			for l := 0; l < g; l++ {
				a[c*g+l], a[bi*g+l] = a[bi*g+l], a[c*g+l]
			}
			piv[c], piv[bi] = piv[bi], piv[c]
		}
		for r := c + 1; r < g; r++ {
			f := a[r*g+c] / a[c*g+c]
			a[r*g+c] = f
			for l := c + 1; l < g; l++ {
				a[r*g+l] -= f * a[c*g+l]
			}
		}
	}
	return nil
}

// luSolve solves a·x = b with the factor from luFactor.
func luSolve(a []float64, piv []int, g int, b, x []float64) {
	for i := 0; i < g; i++ {
		v := b[piv[i]]
		for j := 0; j < i; j++ {
			v -= a[i*g+j] * x[j]
		}
		x[i] = v
	}
	for i := g - 1; i >= 0; i-- {
		v := x[i]
		for j := i + 1; j < g; j++ {
			v -= a[i*g+j] * x[j]
		}
		x[i] = v / a[i*g+i]
	}
}
