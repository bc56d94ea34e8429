package gavel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Gavel's throughput estimator (scheduler/throughput_estimator.py; paper §6): co-located
// throughputs of a new job are not profiled against every partner on every GPU type. Offline,
// a matrix of normalised co-located throughputs (co-located ÷ isolated steps/s, in [0, 1]) is
// measured for a set of reference job types: one row per reference type, one column per
// (worker type, reference partner). Online, a new job is profiled on a few cells; its partial
// row is appended to the reference matrix, the missing entries are filled by matrix completion
// (probabilistic matrix factorisation by alternating least squares: rank 10, ridge 1e-2, as
// Gavel's matrix_completion.pmf_solve), and the job is matched to the nearest reference row by
// cosine distance. Its pair throughputs are then the matched references' normalised pair
// throughputs times each job's own isolated throughput (isolated throughputs are known). As
// the job runs, measured pair throughputs (Observe) replace the estimate for that pair and
// join its row, and the match is recomputed.

// Estimator defaults (Gavel's DEFAULT_MATRIX_COMPLETION_K and _MU).
const (
	DefaultEstimatorRank = 10
	DefaultEstimatorMu   = 1e-2
	pmfEpsilon           = 1e-3 // pmf_solve's stopping rule: mean |ΔX| per entry
	pmfMaxIterations     = 100
)

// EstimatorConfig configures the throughput estimator. Zero values take Gavel's defaults.
type EstimatorConfig struct {
	// WorkerTypes are the matrix's worker types (default: the file's types without
	// "_unconsolidated", sorted, as Gavel's _initialize_throughput_estimator).
	WorkerTypes []string
	// References are the reference job types (default: every scale-factor-1 type of the file
	// that has co-located entries on every worker type, sorted). Gavel samples
	// num_reference_models of its 26 templates.
	References []JobType
	// ProfileFraction is Gavel's profiling_percentage: each (worker type, reference partner)
	// cell of a new job is profiled with this probability (default 0.2, Gavel's figure).
	ProfileFraction float64
	Rank            int     // matrix-completion rank (default 10)
	Mu              float64 // ridge (default 1e-2)
	Seed            uint64
}

// estimator holds the reference matrix.
type estimator struct {
	tp    *Throughputs
	cfg   EstimatorConfig
	refs  []JobType
	ref   [][]float64 // len(refs) × cols
	rng   *rand.Rand
	cache map[JobType]*jobEstimate // PairThroughputs' per-job-type matches
}

// cell is one column of the matrix: a worker type and a reference partner.
type cell struct {
	WorkerType string
	Partner    JobType
}

// newEstimator builds the reference matrix from a throughputs file (Gavel's offline profiles).
func newEstimator(tp *Throughputs, cfg EstimatorConfig) (*estimator, error) {
	if tp == nil {
		return nil, fmt.Errorf("estimator: no throughputs")
	}
	if cfg.WorkerTypes == nil {
		for _, wt := range tp.WorkerTypes() {
			if !strings.HasSuffix(wt, "_unconsolidated") {
				cfg.WorkerTypes = append(cfg.WorkerTypes, wt)
			}
		}
	}
	if cfg.References == nil {
		cfg.References = completeTypes(tp, cfg.WorkerTypes)
	}
	if cfg.ProfileFraction == 0 {
		cfg.ProfileFraction = 0.2
	}
	if cfg.Rank == 0 {
		cfg.Rank = DefaultEstimatorRank
	}
	if cfg.Mu == 0 {
		cfg.Mu = DefaultEstimatorMu
	}
	if !(cfg.ProfileFraction > 0 && cfg.ProfileFraction <= 1) || cfg.Rank < 1 || !(cfg.Mu > 0) {
		return nil, fmt.Errorf("estimator: profile fraction %v (want in (0, 1]), rank %d (want >= 1), mu %v (want > 0)",
			cfg.ProfileFraction, cfg.Rank, cfg.Mu)
	}
	if len(cfg.References) < 2 || len(cfg.WorkerTypes) == 0 {
		return nil, fmt.Errorf("estimator: %d reference job types and %d worker types; want >= 2 and >= 1",
			len(cfg.References), len(cfg.WorkerTypes))
	}
	e := &estimator{tp: tp, cfg: cfg, refs: cfg.References, rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		cache: map[JobType]*jobEstimate{}}
	for _, r := range e.refs {
		row, err := e.trueRow(r)
		if err != nil {
			return nil, fmt.Errorf("estimator: reference %s: %w", r, err)
		}
		e.ref = append(e.ref, row)
	}
	return e, nil
}

// completeTypes lists the scale-factor-1 job types with an isolated and a co-located entry
// against every other such type on every worker type.
func completeTypes(tp *Throughputs, wts []string) []JobType {
	var cand []JobType
	if len(wts) == 0 {
		return nil
	}
	for jt := range tp.Isolated[wts[0]] {
		if jt.ScaleFactor == 1 {
			cand = append(cand, jt)
		}
	}
	sort.Slice(cand, func(a, b int) bool { return cand[a].String() < cand[b].String() })
	var out []JobType
	for _, a := range cand {
		ok := true
		for _, wt := range wts {
			if iso, has := tp.Isolated[wt][a]; !has || !(iso > 0) {
				ok = false
			}
			for _, b := range cand {
				if _, has := tp.Colocated[wt][a][b]; !has {
					ok = false
				}
			}
		}
		if ok {
			out = append(out, a)
		}
	}
	return out
}

// columns lists the matrix columns in order (worker type major, then reference partner).
func (e *estimator) columns() []cell {
	var cs []cell
	for _, wt := range e.cfg.WorkerTypes {
		for _, r := range e.refs {
			cs = append(cs, cell{wt, r})
		}
	}
	return cs
}

// trueRow is a job type's full normalised row from the throughputs file (the oracle).
func (e *estimator) trueRow(jt JobType) ([]float64, error) {
	var row []float64
	for _, c := range e.columns() {
		v, err := e.normalised(c.WorkerType, jt, c.Partner)
		if err != nil {
			return nil, err
		}
		row = append(row, v)
	}
	return row, nil
}

func (e *estimator) normalised(wt string, jt, partner JobType) (float64, error) {
	iso, ok := e.tp.Isolated[wt][jt]
	if !ok || !(iso > 0) {
		return 0, fmt.Errorf("no isolated throughput for %s on %s", jt, wt)
	}
	pair, ok := e.tp.Colocated[wt][jt][partner]
	if !ok {
		return 0, fmt.Errorf("no co-located throughput for %s with %s on %s", jt, partner, wt)
	}
	return math.Min(math.Max(pair[0]/iso, 0), 1), nil
}

// jobEstimate is one job's estimate: its measured cells, its completed row and the reference
// job type it is matched to.
type jobEstimate struct {
	e         *estimator
	measured  map[int]float64 // column → normalised throughput
	Row       []float64       // completed normalised row (measured cells kept)
	Reference JobType         // nearest reference row by cosine distance
	Distance  float64
}

// profile starts a job's estimate the way Gavel's simulator does: every cell of the job's row
// is profiled (read from the throughputs file, the oracle) with probability ProfileFraction.
func (e *estimator) profile(jt JobType) (*jobEstimate, error) {
	truth, err := e.trueRow(jt)
	if err != nil {
		return nil, fmt.Errorf("estimator: %w", err)
	}
	m := map[int]float64{}
	for c, v := range truth {
		if e.rng.Float64() <= e.cfg.ProfileFraction {
			m[c] = v
		}
	}
	return e.estimate(m)
}

// estimate completes a job's row from measured cells (column index → normalised co-located
// throughput in [0, 1], see Columns) and matches it to a reference.
func (e *estimator) estimate(measured map[int]float64) (*jobEstimate, error) {
	cols := len(e.columns())
	for c, v := range measured {
		if c < 0 || c >= cols {
			return nil, fmt.Errorf("estimator: cell %d: want 0..%d", c, cols-1)
		}
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("estimator: cell %d (%s with %s): normalised throughput %v; want in [0, 1]",
				c, e.columns()[c].WorkerType, e.columns()[c].Partner, v)
		}
	}
	j := &jobEstimate{e: e, measured: map[int]float64{}}
	for c, v := range measured {
		j.measured[c] = v
	}
	j.refresh()
	return j, nil
}

func (j *jobEstimate) refresh() {
	e := j.e
	n, cols := len(e.refs), len(e.columns())
	a := make([][]float64, n+1)
	mask := make([][]bool, n+1)
	for i := 0; i < n; i++ {
		a[i] = e.ref[i]
		mask[i] = make([]bool, cols)
		for c := range mask[i] {
			mask[i][c] = true
		}
	}
	a[n], mask[n] = make([]float64, cols), make([]bool, cols)
	for c, v := range j.measured {
		a[n][c], mask[n][c] = v, true
	}
	row := a[n]
	if len(j.measured) < cols {
		x := pmfSolve(a, mask, e.cfg.Rank, e.cfg.Mu, e.rng)
		row = make([]float64, cols)
		for c := range row {
			if mask[n][c] {
				row[c] = a[n][c]
			} else {
				row[c] = math.Min(math.Max(x[n][c], 0), 1)
			}
		}
	}
	j.Row = row
	best, bestD := 0, math.Inf(1)
	for i := 0; i < n; i++ {
		if d := cosineDistance(e.ref[i], row); d < bestD {
			best, bestD = i, d
		}
	}
	j.Reference, j.Distance = e.refs[best], bestD
}

func cosineDistance(a, b []float64) float64 {
	dot, na, nb := 0.0, 0.0, 0.0
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 1
	}
	return 1 - dot/math.Sqrt(na*nb)
}

// pmfSolve is probabilistic matrix factorisation by alternating ridge regressions (the method
// of Gavel's matrix_completion.pmf_solve): A ≈ U·Vᵀ with U, V of rank k drawn N(0, 1), each
// row of U then of V solved in turn on the observed entries only, (VᵀC_iV + μI)u_i = VᵀC_i a_i,
// until the mean absolute change of U·Vᵀ per entry falls below 1e-3 (at most 100 rounds).
func pmfSolve(a [][]float64, mask [][]bool, k int, mu float64, rng *rand.Rand) [][]float64 {
	n, m := len(a), len(a[0])
	u, v := randMatrix(n, k, rng), randMatrix(m, k, rng)
	prev := product(u, v)
	for it := 0; it < pmfMaxIterations; it++ {
		for i := 0; i < n; i++ {
			ridgeRow(u[i], v, func(j int) (float64, bool) { return a[i][j], mask[i][j] }, mu)
		}
		for j := 0; j < m; j++ {
			ridgeRow(v[j], u, func(i int) (float64, bool) { return a[i][j], mask[i][j] }, mu)
		}
		x := product(u, v)
		diff := 0.0
		for i := range x {
			for j := range x[i] {
				diff += math.Abs(x[i][j] - prev[i][j])
			}
		}
		prev = x
		if diff/float64(n*m) < pmfEpsilon {
			break
		}
	}
	return prev
}

// ridgeRow solves (Σ_obs f fᵀ + μI) out = Σ_obs y f over the observed entries of one row, f
// the other factor's rows, by Cholesky (the matrix is symmetric positive definite).
func ridgeRow(out []float64, f [][]float64, get func(int) (float64, bool), mu float64) {
	k := len(out)
	g := make([]float64, k*k)
	rhs := make([]float64, k)
	for j, fj := range f {
		y, ok := get(j)
		if !ok {
			continue
		}
		for p := 0; p < k; p++ {
			rhs[p] += y * fj[p]
			for q := 0; q <= p; q++ {
				g[p*k+q] += fj[p] * fj[q]
			}
		}
	}
	for p := 0; p < k; p++ {
		g[p*k+p] += mu
	}
	cholSolve(g, rhs, k)
	copy(out, rhs)
}

// cholSolve solves G x = b in place (b becomes x) for a symmetric positive-definite G given by
// its lower triangle.
func cholSolve(g, b []float64, k int) {
	for j := 0; j < k; j++ {
		s := g[j*k+j]
		for p := 0; p < j; p++ {
			s -= g[j*k+p] * g[j*k+p]
		}
		d := math.Sqrt(s)
		g[j*k+j] = d
		for i := j + 1; i < k; i++ {
			t := g[i*k+j]
			for p := 0; p < j; p++ {
				t -= g[i*k+p] * g[j*k+p]
			}
			g[i*k+j] = t / d
		}
	}
	for i := 0; i < k; i++ { // L y = b
		for p := 0; p < i; p++ {
			b[i] -= g[i*k+p] * b[p]
		}
		b[i] /= g[i*k+i]
	}
	for i := k - 1; i >= 0; i-- { // Lᵀ x = y
		for p := i + 1; p < k; p++ {
			b[i] -= g[p*k+i] * b[p]
		}
		b[i] /= g[i*k+i]
	}
}

func randMatrix(r, c int, rng *rand.Rand) [][]float64 {
	out := make([][]float64, r)
	for i := range out {
		out[i] = make([]float64, c)
		for j := range out[i] {
			out[i][j] = rng.NormFloat64()
		}
	}
	return out
}

func product(u, v [][]float64) [][]float64 {
	out := make([][]float64, len(u))
	for i, ui := range u {
		out[i] = make([]float64, len(v))
		for j, vj := range v {
			s := 0.0
			for p := range ui {
				s += ui[p] * vj[p]
			}
			out[i][j] = s
		}
	}
	return out
}

// estimatedPair is Gavel's estimated co-located throughput of two jobs on a worker type
// (_populate_job_combination_metadata): the matched references' normalised pair throughputs
// times each job's own isolated throughput (steps/s). A measured cell of a (the job's row
// against b's reference type) is used for a's side when there is one.
func (e *estimator) estimatedPair(wt string, a, b *jobEstimate, isoA, isoB float64) ([2]float64, error) {
	na, err := a.normalisedWith(wt, b.Reference)
	if err != nil {
		return [2]float64{}, err
	}
	nb, err := b.normalisedWith(wt, a.Reference)
	if err != nil {
		return [2]float64{}, err
	}
	return [2]float64{na * isoA, nb * isoB}, nil
}

// normalisedWith is the job's normalised throughput next to a reference partner on wt: the
// measured cell if any, else its matched reference's entry.
func (j *jobEstimate) normalisedWith(wt string, partner JobType) (float64, error) {
	for c, cell := range j.e.columns() {
		if cell.WorkerType == wt && cell.Partner == partner {
			if v, ok := j.measured[c]; ok {
				return v, nil
			}
			break
		}
	}
	return j.e.normalised(wt, j.Reference, partner)
}

// PairThroughputs is the small entry point for packing policies and the simulator: the
// estimated co-located throughputs [a's, b's] (steps/s) of job types a and b on each of types.
// Each job type is profiled once (profile, then cached, so every job of a type shares its
// match, as Gavel's reference_job_map does per job); isolated throughputs are the file's.
func (e *estimator) PairThroughputs(a, b JobType, types []string) ([][2]float64, error) {
	ea, err := e.cached(a)
	if err != nil {
		return nil, err
	}
	eb, err := e.cached(b)
	if err != nil {
		return nil, err
	}
	out := make([][2]float64, len(types))
	for i, wt := range types {
		out[i], err = e.estimatedPair(wt, ea, eb, e.tp.Isolated[wt][a], e.tp.Isolated[wt][b])
		if err != nil {
			return nil, fmt.Errorf("estimator: %s with %s on %s: %w", a, b, wt, err)
		}
	}
	return out, nil
}

func (e *estimator) cached(jt JobType) (*jobEstimate, error) {
	if j, ok := e.cache[jt]; ok {
		return j, nil
	}
	j, err := e.profile(jt)
	if err != nil {
		return nil, err
	}
	e.cache[jt] = j
	return j, nil
}
