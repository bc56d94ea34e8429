package scheduler

// slab hands out runs of elements from chunks it keeps, so that a round of
// a 10,000-GPU cluster, which makes thousands of placements, allocates a
// few chunks rather than one object per placement, and a round reused with
// Reset allocates none. A run handed out stays valid until reset.
type slab[T any] struct {
	chunks [][]T
	at     int // the chunk being filled
}

// slabChunk is how many elements one chunk holds (more when one run needs
// more).
const slabChunk = 1024

// take returns a run of n elements, holding whatever they held before; its
// capacity is n, so appending to it never writes over another run.
func (s *slab[T]) take(n int) []T {
	for ; s.at < len(s.chunks); s.at++ {
		if c := s.chunks[s.at]; cap(c)-len(c) >= n {
			k := len(c)
			s.chunks[s.at] = c[:k+n]
			return c[k : k+n : k+n]
		}
	}
	s.chunks = append(s.chunks, make([]T, n, max(slabChunk, n)))
	return s.chunks[s.at][:n:n]
}

// reset makes every chunk free again.
func (s *slab[T]) reset() {
	for i := range s.chunks {
		s.chunks[i] = s.chunks[i][:0]
	}
	s.at = 0
}
