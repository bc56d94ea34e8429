package lp

import (
	"math/rand"
	"testing"
)

// TestSolve_StressNoErrors runs every policy on many random and degenerate problems and asserts
// that each solve succeeds and respects the invariants. Degenerate cases: identical jobs,
// throughputs equal across types, 8-GPU jobs on 1-GPU types, remaining steps from 1 to 1e9.
func TestSolve_StressNoErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	sizes := []int{1, 2, 3, 7, 20, 64, 150}
	if testing.Short() {
		sizes = sizes[:5]
	}
	for trial := 0; trial < 6; trial++ {
		for _, n := range sizes {
			w := []int{rng.Intn(40), rng.Intn(40), 1 + rng.Intn(40)}
			p := randomProblem(rng, n, w)
			switch trial {
			case 1: // identical jobs
				for m := range p.Jobs {
					p.Jobs[m].Throughput = append([]float64(nil), p.Jobs[0].Throughput...)
					p.Jobs[m].ScaleFactor, p.Jobs[m].RemainingSteps = p.Jobs[0].ScaleFactor, p.Jobs[0].RemainingSteps
				}
			case 2: // type-blind throughputs
				for m := range p.Jobs {
					v := p.Jobs[m].Throughput[0]
					p.Jobs[m].Throughput = []float64{v, v, v}
				}
			case 3: // big jobs on a tiny cluster
				p.Workers = []int{1, 1, 1}
				for m := range p.Jobs {
					p.Jobs[m].ScaleFactor = 8
				}
			case 4: // remaining steps over nine orders of magnitude, some jobs unable to run on a type
				for m := range p.Jobs {
					p.Jobs[m].RemainingSteps = 1 + rng.Float64()*1e9*float64(rng.Intn(2))
					p.Jobs[m].Throughput[rng.Intn(3)] = 0
				}
			case 5: // everyone just started
				for m := range p.Jobs {
					p.Jobs[m].TimeSinceStart, p.Jobs[m].CumulativeIsolatedTime = 0, 0
				}
			}
			for _, policy := range Policies() {
				for _, corrected := range []bool{false, true} {
					opts := Options{Prices: []float64{3, 1.5, 1}, AgnosticCorrected: corrected}
					sol, err := solveDetail(policy, p, opts)
					if err != nil {
						t.Fatalf("trial %d n=%d w=%v %s corrected=%v: %v", trial, n, p.Workers, policy, corrected, err)
					}
					if sol.Warning != "" {
						t.Errorf("trial %d n=%d w=%v %s corrected=%v: not optimal: %s", trial, n, p.Workers, policy, corrected, sol.Warning)
					}
					checkInvariants(t, p, sol.X)
				}
			}
		}
	}
}

// FuzzSolve checks that any valid problem is solved within the invariants.
func FuzzSolve(f *testing.F) {
	f.Add(int64(1), uint8(5), uint8(4), uint8(4), uint8(4), uint8(0))
	f.Add(int64(2), uint8(40), uint8(1), uint8(0), uint8(9), uint8(3))
	f.Fuzz(func(t *testing.T, seed int64, n, w0, w1, w2, pol uint8) {
		rng := rand.New(rand.NewSource(seed))
		p := randomProblem(rng, int(n%80), []int{int(w0 % 50), int(w1 % 50), int(w2 % 50)})
		policies := Policies()
		policy := policies[int(pol)%len(policies)]
		x, err := Solve(policy, p, Options{Prices: []float64{2, 1, 0.5}})
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		checkInvariants(t, p, x)
	})
}
