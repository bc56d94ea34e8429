package joint

import (
	"fmt"
	"io"
)

// Row is the comparison's outcome for one seed and load: mean JCT in hours per policy.
type Row struct {
	Seed        uint64
	JobsPerHour float64
	MeanJCTh    map[string]float64
}

// Compare simulates every policy on cluster for each seed and load with n jobs.
func Compare(cluster []GPUType, seeds []uint64, loads []float64, n int) ([]Row, error) {
	var rows []Row
	for _, load := range loads {
		for _, seed := range seeds {
			jobs, err := Generate(seed, n, load)
			if err != nil {
				return nil, err
			}
			row := Row{Seed: seed, JobsPerHour: load, MeanJCTh: map[string]float64{}}
			for _, p := range PolicyNames() {
				r, err := Simulate(p, cluster, jobs)
				if err != nil {
					return nil, fmt.Errorf("joint: %s, seed %d, load %g: %w", p, seed, load, err)
				}
				row.MeanJCTh[p] = r.MeanJCT / 3600
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// WriteTable renders rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) error {
	if _, err := fmt.Fprintln(w, "| jobs/h | seed | gavel (h) | synergy (h) | joint (h) | joint vs gavel | joint vs synergy |\n|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rows {
		g, s, j := r.MeanJCTh[Gavel], r.MeanJCTh[Synergy], r.MeanJCTh[Joint]
		if _, err := fmt.Fprintf(w, "| %g | %d | %.2f | %.2f | %.2f | %.2f× | %.2f× |\n", r.JobsPerHour, r.Seed, g, s, j, g/j, s/j); err != nil {
			return err
		}
	}
	return nil
}
