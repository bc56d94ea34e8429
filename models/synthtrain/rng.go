package synthtrain

import "math/bits"

// rng is a splitmix64 generator. It is ours rather than math/rand's so
// that datasets, shuffles and augmentations stay byte-for-byte the same
// across Go releases for a given seed.
type rng struct{ s uint64 }

// newRNG derives a generator from a seed and any number of stream keys
// (epoch, file index, ...), so every stream is independent of the order in
// which goroutines happen to draw from it.
func newRNG(seed uint64, keys ...uint64) rng {
	r := rng{s: seed ^ 0x5851f42d4c957f2d}
	for _, k := range keys {
		r.s ^= k + 0x9e3779b97f4a7c15
		r.s = r.next()
	}
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a value in [0, n); n must be > 0.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// between returns a value in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// shuffle permutes p in place (Fisher–Yates).
func (r *rng) shuffle(p []int) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}
