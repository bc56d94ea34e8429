package sensitivity

import (
	"math"
	"sort"
)

// mva is the throughput of n loader workers, each cycling through a fetch
// (a shared station of rate fRate samples/s) and preprocessing (a shared
// station of rate pRate): exact mean-value analysis of that closed network
// (Reiser & Lavenberg 1980). n = 1: 1 / (1/pRate + 1/fRate); n → ∞:
// min(pRate, fRate). Never above either rate.
func mva(n int, pRate, fRate float64) float64 {
	if !(pRate > 0) || !(fRate > 0) {
		return 0
	}
	if math.IsInf(fRate, 1) {
		return pRate
	}
	dF, dP := 1/fRate, 1/pRate
	var qF, qP, x float64
	for k := 1; k <= n; k++ {
		rF, rP := dF*(1+qF), dP*(1+qP)
		x = float64(k) / (rF + rP)
		qF, qP = x*rF, x*rP
	}
	return x
}

// invMVA returns the fetch rate F at which mva(n, pRate, F) = x (+Inf when
// x >= pRate): bisection in log F, as mva rises with F.
func invMVA(n int, pRate, x float64) float64 {
	if x >= pRate {
		return math.Inf(1)
	}
	if !(x > 0) {
		return 0
	}
	lo, hi := x, x*2
	for mva(n, pRate, hi) < x {
		hi *= 2
		if hi > 1e15 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 100; i++ {
		mid := math.Sqrt(lo * hi)
		if mva(n, pRate, mid) < x {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi)
}

// interpXY interpolates points linearly, flat past the ends; the interval
// is the bracket's larger one.
func interpXY(pts []xy, x float64) (v, ci float64) {
	if x <= pts[0].x {
		return pts[0].v, pts[0].ci
	}
	for k := 1; k < len(pts); k++ {
		if x <= pts[k].x {
			a, b := pts[k-1], pts[k]
			t := (x - a.x) / (b.x - a.x)
			return a.v + (b.v-a.v)*t, math.Max(a.ci, b.ci)
		}
	}
	last := pts[len(pts)-1]
	return last.v, last.ci
}

// fitConcaveMonotone replaces the knots' values with the weighted
// least-squares fit that is concave and non-decreasing in cpus, with the
// fixed origin, by Dykstra's alternating projections onto the half-spaces
// "slope k >= slope k+1" and "last slope >= 0" (each projection is exact in
// the weighted norm, so the cycle converges to the projection onto their
// intersection). Weights are 1 / relative CI².
func fitConcaveMonotone(ks []cpuKnot) {
	n := len(ks)
	if n <= 1 {
		return
	}
	v := make([]float64, n)
	winv := make([]float64, n) // inverse weights; 0 = fixed
	for i, k := range ks {
		v[i] = k.v
		if !k.fixed {
			winv[i] = sq(relCI(k.meas, k.ci) * math.Max(k.meas, 1e-9))
		}
	}
	x := func(i int) float64 { return ks[i].cpus }
	// constraints as coefficient triples over (i-1, i, i+1) or pairs.
	type con struct {
		idx  []int
		coef []float64
	}
	var cons []con
	for i := 1; i+1 < n; i++ {
		// (v[i]-v[i-1])/(x_i-x_{i-1}) - (v[i+1]-v[i])/(x_{i+1}-x_i) >= 0
		d1, d2 := x(i)-x(i-1), x(i+1)-x(i)
		cons = append(cons, con{[]int{i - 1, i, i + 1}, []float64{-1 / d1, 1/d1 + 1/d2, -1 / d2}})
	}
	// last slope >= 0
	cons = append(cons, con{[]int{n - 2, n - 1}, []float64{-1, 1}})
	incr := make([][]float64, len(cons))
	for i := range incr {
		incr[i] = make([]float64, n)
	}
	for iter := 0; iter < 5000; iter++ {
		moved := 0.0
		for ci, c := range cons {
			// y = v + incr; project y onto {a·y >= 0}
			y := make([]float64, n)
			for i := range v {
				y[i] = v[i] + incr[ci][i]
			}
			var dot, norm float64
			for j, i := range c.idx {
				dot += c.coef[j] * y[i]
				norm += c.coef[j] * c.coef[j] * winv[i]
			}
			nv := append([]float64(nil), y...)
			if dot < 0 && norm > 0 {
				for j, i := range c.idx {
					nv[i] = y[i] - dot/norm*winv[i]*c.coef[j]
				}
			}
			for i := range v {
				incr[ci][i] = y[i] - nv[i]
				moved = math.Max(moved, math.Abs(nv[i]-v[i]))
				v[i] = nv[i]
			}
		}
		if moved < 1e-9 {
			break
		}
	}
	for i := range ks {
		if !ks[i].fixed {
			ks[i].v = math.Max(v[i], 0)
		}
	}
}

// isotonicH makes the knots' h non-decreasing in frac by weighted
// pool-adjacent-violators.
func isotonicH(ks []hKnot) {
	type block struct {
		h, w float64
		n    int
	}
	var bs []block
	for _, k := range ks {
		bs = append(bs, block{k.h, k.w, 1})
		for len(bs) > 1 && bs[len(bs)-2].h > bs[len(bs)-1].h {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			w := a.w + b.w
			bs = bs[:len(bs)-2]
			bs = append(bs, block{(a.h*a.w + b.h*b.w) / w, w, a.n + b.n})
		}
	}
	i := 0
	for _, b := range bs {
		for j := 0; j < b.n; j++ {
			ks[i].h = b.h
			i++
		}
	}
}

func mergeSameFrac(ks []hKnot) []hKnot {
	var out []hKnot
	for _, k := range ks {
		if n := len(out); n > 0 && out[n-1].frac == k.frac {
			// a lower bound beside an observation: keep the larger h
			if k.h > out[n-1].h {
				out[n-1].h = k.h
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

func relCI(v, ci float64) float64 {
	if !(v > 0) {
		return 1
	}
	return math.Max(ci/v, minRelCI)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func sq(x float64) float64 { return x * x }
