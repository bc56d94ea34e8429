package docker

import (
	"context"
	"testing"

	"github.com/synergy-sched/synergy/runner"
)

// BenchmarkEngine_StartWait measures one profiling point's container
// overhead: create, start, run the probe to exit, inspect, remove.
func BenchmarkEngine_StartWait(b *testing.B) {
	r := realRunnerB(b)
	for i := 0; i < b.N; i++ {
		h, err := r.Start(context.Background(), runner.Job{Name: "bench", Argv: []string{"/probe"}, Limits: runner.Limits{CPUs: 1, MemLimitBytes: 64 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := h.Wait(); err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// BenchmarkEngine_Stats compares reading a running container's counters
// from its cgroup files with the Engine's one-shot stats API.
func BenchmarkEngine_Stats(b *testing.B) {
	r := realRunnerB(b)
	h, err := r.Start(context.Background(), runner.Job{Name: "bench-stats", Argv: []string{"/probe", "--sleep"}, Limits: runner.Limits{MemLimitBytes: 64 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = h.Stop(); _, _ = h.Wait() }()
	hh := h.(*handle)
	b.Run("cgroup-files", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := h.Stats(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("engine-api", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := hh.apiStats(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
