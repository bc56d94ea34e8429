package k8s

import "github.com/synergy-sched/synergy/scheduler"

// Placer answers one placement question as `synergy schedule` does. The
// scheduler uses QueuePlacer; the seam lets tests hand in a canned plan.
type Placer interface {
	Place(q scheduler.Queue) (*scheduler.QueuePlan, error)
}

// QueuePlacer is scheduler.PlaceQueue, the use case behind
// `synergy schedule`: in-use resources reserved, the queue offered in the
// policy's order (FIFO here) to the strategy, every job placed or
// explained.
type QueuePlacer struct{}

// Place implements Placer.
func (QueuePlacer) Place(q scheduler.Queue) (*scheduler.QueuePlan, error) {
	return scheduler.PlaceQueue(q)
}
