package scheduler

import "slices"

// Orderer is a strategy that orders the round's jobs itself, as Synergy's
// DRF and TETRIS schedulers do (in the original they replace FIFO/SRTF/...;
// here the policy's order is kept as the tie-break, its job selection —
// LAS's GPU-count prefix — too).
type Orderer interface {
	// Reorder returns offer sorted by the strategy's key, stably; it must
	// not change offer itself (the policy's queue persists between rounds).
	Reorder(offer []*Active, c *Cluster, ctx OrderContext) []*Active
}

// Offer is the jobs to offer a strategy this round: the policy's order,
// then the strategy's own when it is an Orderer.
func Offer(p Policy, s Strategy, queue []*Active, c *Cluster, ctx OrderContext) []*Active {
	offer := p.Order(queue, ctx)
	if o, ok := s.(Orderer); ok {
		return o.Reorder(offer, c, ctx)
	}
	return offer
}

// reorderBy copies offer and sorts the copy stably by (−priority, key).
func reorderBy(offer []*Active, key func(a *Active) float64) []*Active {
	out := slices.Clone(offer)
	keys := make(map[*Active]float64, len(out))
	for _, a := range out {
		keys[a] = key(a)
	}
	slices.SortStableFunc(out, func(a, b *Active) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		ka, kb := keys[a], keys[b]
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return out
}
