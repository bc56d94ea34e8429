package sensitivity

import (
	"errors"
	"math"
)

// CellDiff is one cell of a comparison between two profiles.
type CellDiff struct {
	CPUs          float64 `json:"cpus"`
	MemLimitBytes int64   `json:"mem_limit_bytes"`
	// A and B are the samples/s of the two profiles at the cell (failed
	// cells count as 0).
	A float64 `json:"a_samples_per_s"`
	B float64 `json:"b_samples_per_s"`
	// AMeasured and BMeasured say whether each side measured the cell.
	AMeasured bool `json:"a_measured"`
	BMeasured bool `json:"b_measured"`
	// DiffPct is (A − B) / B in percent (0 when B is 0; see BZero).
	DiffPct float64 `json:"diff_pct"`
	BZero   bool    `json:"b_zero,omitempty"`
	// BaselinePct is the MinIO formula's signed error against B at the
	// cell, from A's measured cells, when it can be computed.
	BaselinePct *float64 `json:"baseline_pct,omitempty"`
}

// Comparison is a cell-by-cell comparison of profile A (e.g. a fitted
// profile from few points) against B (e.g. a full grid, the reference) on
// the cells both grids have.
type Comparison struct {
	Cells []CellDiff `json:"cells"`
	// Scored is how many cells the error figures are over: cells A did not
	// measure (predicted) where B has a non-zero value.
	Scored int `json:"scored_cells"`
	// MAPEPct is the mean |A − B| / B over the scored cells, in percent.
	MAPEPct float64 `json:"mape_pct"`
	// WorstErrPct and its cell: the largest |A − B| / B scored.
	WorstErrPct   float64 `json:"worst_err_pct"`
	WorstCPUs     float64 `json:"worst_cpus"`
	WorstMemBytes int64   `json:"worst_mem_limit_bytes"`
	// BaselineMAPEPct is the MinIO formula's MAPE on the same cells
	// (predicting from A's measured cells); BaselineCells how many it
	// could predict.
	BaselineMAPEPct float64 `json:"baseline_mape_pct"`
	BaselineCells   int     `json:"baseline_cells"`
	BaselineName    string  `json:"baseline_name"`
	// AllMAPEPct is the MAPE over every common cell with B non-zero,
	// measured by A or not.
	AllMAPEPct float64 `json:"all_mape_pct"`
	// RepeatMAPEPct is the MAPE over the cells both measured (BothMeasured
	// of them): how far two measurements of the same cell differ, the floor
	// under any prediction's error.
	RepeatMAPEPct float64 `json:"repeat_mape_pct"`
	BothMeasured  int     `json:"both_measured_cells"`
}

// Compare compares a with the reference b cell by cell on their common
// grid. Error figures are over the cells a did not measure: how well a's
// fit predicts what b measured. Both profiles should be filled (Fill) so
// every cell has a value; a cell missing from either side is skipped.
func Compare(a, b *Profile) (*Comparison, error) {
	cmp := &Comparison{BaselineName: BaselineMinIO}
	var all int
	for _, c := range a.Axes.CPUs {
		for _, m := range a.Axes.MemLimitBytes {
			ca, cb := a.Cell(c, m), b.Cell(c, m)
			if ca == nil || cb == nil {
				continue
			}
			d := CellDiff{CPUs: c, MemLimitBytes: m, A: value(ca), B: value(cb), AMeasured: ca.Measured, BMeasured: cb.Measured}
			if d.B > 0 {
				d.DiffPct = (d.A - d.B) / d.B * 100
				cmp.AllMAPEPct += math.Abs(d.DiffPct)
				all++
			} else {
				d.BZero = true
			}
			if bv, ok := MinIOPredict(a, c, m); ok && d.B > 0 {
				e := (bv - d.B) / d.B * 100
				d.BaselinePct = &e
			}
			if ca.Measured && cb.Measured && d.B > 0 {
				cmp.BothMeasured++
				cmp.RepeatMAPEPct += math.Abs(d.DiffPct)
			}
			if !ca.Measured && d.B > 0 {
				cmp.Scored++
				e := math.Abs(d.DiffPct)
				cmp.MAPEPct += e
				if e > cmp.WorstErrPct || cmp.Scored == 1 {
					cmp.WorstErrPct, cmp.WorstCPUs, cmp.WorstMemBytes = e, c, m
				}
				if d.BaselinePct != nil {
					cmp.BaselineMAPEPct += math.Abs(*d.BaselinePct)
					cmp.BaselineCells++
				}
			}
			cmp.Cells = append(cmp.Cells, d)
		}
	}
	if len(cmp.Cells) == 0 {
		return nil, errors.New("compare: the two profiles have no cell in common (different axes?)")
	}
	if cmp.Scored > 0 {
		cmp.MAPEPct /= float64(cmp.Scored)
	}
	if cmp.BaselineCells > 0 {
		cmp.BaselineMAPEPct /= float64(cmp.BaselineCells)
	}
	if all > 0 {
		cmp.AllMAPEPct /= float64(all)
	}
	if cmp.BothMeasured > 0 {
		cmp.RepeatMAPEPct /= float64(cmp.BothMeasured)
	}
	return cmp, nil
}

// value is a cell's throughput, 0 for a failure.
func value(c *Cell) float64 {
	if c.Failure != nil {
		return 0
	}
	return c.SamplesPerS
}
