package lp

import (
	"math"
	"math/rand"
	"testing"
)

// solveGen against gonum's simplex on random bounded LPs (max g·x, A·x <= b, x >= 0) with
// the packed policies' shape: a few rows, many sparse non-negative columns.
func TestSolveGen_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for inst := 0; inst < 40; inst++ {
		m, n := 2+rng.Intn(8), 1+rng.Intn(40)
		q := &genLP{m: m, b: make([]float64, m)}
		ref := refLP{rhs: make([]float64, m), rows: make([][]float64, m)}
		for i := range q.b {
			q.b[i] = 0.5 + rng.Float64()*3
			ref.rhs[i] = q.b[i]
			ref.rows[i] = make([]float64, n)
		}
		for j := 0; j < n; j++ {
			var nz []nzEntry
			for i := 0; i < m; i++ {
				if i == j%m || rng.Float64() < 0.3 { // every column bounded by a positive row
					v := 0.1 + rng.Float64()*5
					nz = append(nz, nzEntry{i, v})
					ref.rows[i][j] = v
				}
			}
			obj := rng.Float64()*4 - 1
			q.addCol(obj, nz...)
			ref.obj = append(ref.obj, obj)
		}
		want, _ := ref.solve(t)
		res, err := solveGen(q)
		if err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		if math.Abs(res.primalObj-want) > 1e-7*(1+math.Abs(want)) {
			t.Errorf("instance %d (%d rows, %d cols): objective %.12g, simplex %.12g", inst, m, n, res.primalObj, want)
		}
		if math.Abs(res.dualOb-want) > 1e-7*(1+math.Abs(want)) {
			t.Errorf("instance %d: dual bound %.12g, simplex %.12g", inst, res.dualOb, want)
		}
		ax := make([]float64, m)
		for j, col := range q.cols {
			if res.x[j] < 0 {
				t.Fatalf("instance %d: x[%d] = %g < 0", inst, j, res.x[j])
			}
			for _, e := range col {
				ax[e.row] += e.v * res.x[j]
			}
		}
		for i := range ax {
			if ax[i] > q.b[i]*(1+1e-8)+1e-9 {
				t.Errorf("instance %d: row %d: %g > %g", inst, i, ax[i], q.b[i])
			}
		}
	}
}
