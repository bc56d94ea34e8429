package profiler

import (
	"github.com/synergy-sched/synergy/sensitivity"
)

// Spending a time budget where the model is least sure (Config.TimeBudget,
// docs/cost.md). Without a budget the optimistic strategy's last step
// measures the cell of largest predicted uncertainty (the 95% half-width)
// until Config.Budget points: a point runs a set number of iterations, so
// its time goes as 1 / throughput and that half-width is the relative
// uncertainty per unit of time. With a budget the time of a point is known
// better: the points measured so far say what a warm (unlimited) and a
// cold (limited) point cost, start-up and first pass included. The next
// point is then the cell of largest relative uncertainty per estimated
// second among those whose estimate fits in the time left, and the
// strategy goes on (no point cap unless one was given) until none is
// uncertain by more than refineRelCI or none fits.

// pointCost estimates a point's seconds from the points measured so far:
// per kind (warm: unlimited memory; cold: a limited memory point, which
// pays a first pass), the mean of their seconds before measuring plus the
// samples they measured over the candidate's predicted rate.
type pointCost struct {
	warmup, samples [2]float64 // sums per kind
	n               [2]int
}

func kindOf(mem int64) int {
	if sensitivity.Unlimited(mem) {
		return 0
	}
	return 1
}

// newPointCost reads the measured, successful points with cost stats.
func newPointCost(cells []sensitivity.Cell) *pointCost {
	pc := &pointCost{}
	for _, c := range cells {
		if !c.Measured || c.Failure != nil || c.Stats == nil || c.Stats.WallSeconds <= 0 {
			continue
		}
		k := kindOf(c.MemLimitBytes)
		pc.warmup[k] += c.Stats.WarmupSeconds
		pc.samples[k] += c.Stats.MeasureSeconds * c.SamplesPerS
		pc.n[k]++
	}
	return pc
}

// seconds is the estimated wall time of measuring cell c predicted at
// rate samples/s; ok=false when no point was measured yet. A kind not
// measured yet borrows the other kind's figures.
func (pc *pointCost) seconds(mem int64, rate float64) (float64, bool) {
	k := kindOf(mem)
	if pc.n[k] == 0 {
		k = 1 - k
	}
	if pc.n[k] == 0 || rate <= 0 {
		return 0, false
	}
	n := float64(pc.n[k])
	return pc.warmup[k]/n + pc.samples[k]/n/rate, true
}

// pickUncertain returns the unmeasured cell to measure next among cells
// whose relative 95% half-width exceeds refineRelCI, or nil. Without a
// time budget (leftSeconds < 0) the score is the half-width (samples/s);
// with one, the relative half-width per estimated second, skipping cells
// whose estimate exceeds leftSeconds (skipped reports whether any
// uncertain cell was left out for time).
func pickUncertain(cells []sensitivity.Cell, pc *pointCost, leftSeconds float64) (pick *sensitivity.Cell, skipped bool) {
	score := 0.0
	for i := range cells {
		c := &cells[i]
		if c.Measured || c.SamplesPerS <= 0 {
			continue
		}
		r := c.SamplesPerSCI95 / c.SamplesPerS
		if r <= refineRelCI {
			continue
		}
		v := c.SamplesPerSCI95
		if leftSeconds >= 0 {
			if sec, ok := pc.seconds(c.MemLimitBytes, c.SamplesPerS); ok {
				if sec > leftSeconds {
					skipped = true
					continue
				}
				v = r / sec
			}
		}
		if v > score {
			pick, score = c, v
		}
	}
	return pick, skipped
}

// refinePoint is the optimistic strategy's last step: the cell the model
// is least sure of (per second, under a time budget); ok=false when no
// prediction is uncertain enough or none fits in the time left (then the
// sweep's stop reason is the time budget).
func refinePoint(s *recorder) (point, bool) {
	s.finish()
	left := -1.0
	if b, ok := s.budgetLeft(); ok {
		left = max(0, b.Seconds())
	}
	pick, skipped := pickUncertain(s.prof.Cells, newPointCost(s.prof.Cells), left)
	if pick == nil {
		s.budgetShort = skipped
		return point{}, false
	}
	return mkPoint(pick.CPUs, pick.MemLimitBytes, sensitivity.PhaseMemory), true
}
