package local_test

import (
	"context"
	"os"
	"testing"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/local"
)

// BenchmarkLocal_StartWait measures the runner's fixed cost per profiling
// point: make the cgroups with limits, start `true` through the gate (v1)
// or straight into the cgroup (v2), wait, read the final counters, remove.
func BenchmarkLocal_StartWait(b *testing.B) {
	if os.Geteuid() != 0 {
		testreq.Skip(b, "cgroup", "not root")
	}
	r, err := local.New(local.Options{Prefix: "synergy-bench"})
	if err != nil {
		testreq.Skip(b, "cgroup", err.Error())
	}
	job := runner.Job{Name: "bench", Argv: []string{"true"}, Limits: runner.Limits{CPUs: 1, MemLimitBytes: 256 << 20}}
	for b.Loop() {
		h, err := r.Start(context.Background(), job)
		if err != nil {
			b.Fatal(err)
		}
		res, err := h.Wait()
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}
