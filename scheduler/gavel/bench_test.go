package gavel

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkContinuous108GPUs is a whole continuous simulation as in
// Gavel's paper: 36:36:36, Gavel's generator, jobs 4000-4999 measured (so
// about 5,000 jobs simulated), max_min_fairness_perf through the LP, 2 jobs/h. The
// throughputs are our made-up file for Gavel's 26 templates.
func BenchmarkContinuous108GPUs(b *testing.B) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		b.Fatal(err)
	}
	spec, err := ParseClusterSpec("36:36:36", "")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		g, err := NewGenerator(GeneratorConfig{Seed: 0, MeanInterarrivalS: 3600 / 2.0}, tp)
		if err != nil {
			b.Fatal(err)
		}
		p, _ := NewPolicy("max_min_fairness_perf", 0, false)
		res, err := Run(context.Background(), Config{Cluster: spec, Window: &Window{First: 4000, Last: 4999}}, tp, Workload{Generator: g}, p)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.NumJobs), "jobs")
		b.ReportMetric(res.MeanJCTS/3600, "meanJCT_h")
	}
}
