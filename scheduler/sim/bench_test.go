package sim

import (
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// BenchmarkAnchorPointTune is the whole default point (9 jobs/h, window
// 4000–4999) under FIFO+tune, seed 1.
func BenchmarkAnchorPointTune(b *testing.B) {
	for i := 0; i < b.N; i++ {
		anchorRun(b, scheduler.Tune{}, 1)
	}
}

// BenchmarkAnchorPointFair is the same under FIFO+fair.
func BenchmarkAnchorPointFair(b *testing.B) {
	for i := 0; i < b.N; i++ {
		anchorRun(b, scheduler.Fair{}, 1)
	}
}
