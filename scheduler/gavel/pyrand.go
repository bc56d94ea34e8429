package gavel

import "math/bits"

// PyRandom is CPython 3's random.Random: a Mersenne Twister (MT19937)
// seeded as random.seed(int) seeds it (init_by_array over the integer's
// 32-bit words), with random(), getrandbits, randrange, choice, shuffle,
// sample and uniform drawing the same numbers in the same order as
// CPython 3.11 does. Gavel draws its workloads and its random choices
// with it, so matching Gavel job by job needs it bit for bit.
type PyRandom struct {
	mt  [624]uint32
	mti int
}

// NewPyRandom is random.Random(seed) for a non-negative seed.
func NewPyRandom(seed uint64) *PyRandom {
	r := &PyRandom{}
	r.Seed(seed)
	return r
}

func (r *PyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = 624
}

// Seed is random.seed(n) for n ≥ 0 (CPython takes abs(n) and splits it
// into 32-bit words, least significant first; 0 is the key [0]).
func (r *PyRandom) Seed(n uint64) {
	key := []uint32{uint32(n)}
	if n>>32 != 0 {
		key = append(key, uint32(n>>32))
	}
	r.initByArray(key)
}

func (r *PyRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := 624
	if len(key) > k {
		k = len(key)
	}
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// Uint32 is genrand_uint32.
func (r *PyRandom) Uint32() uint32 {
	const upper, lower = 0x80000000, 0x7fffffff
	mag := [2]uint32{0, 0x9908b0df}
	if r.mti >= 624 {
		var kk int
		for kk = 0; kk < 624-397; kk++ {
			y := (r.mt[kk] & upper) | (r.mt[kk+1] & lower)
			r.mt[kk] = r.mt[kk+397] ^ (y >> 1) ^ mag[y&1]
		}
		for ; kk < 623; kk++ {
			y := (r.mt[kk] & upper) | (r.mt[kk+1] & lower)
			r.mt[kk] = r.mt[kk+(397-624)] ^ (y >> 1) ^ mag[y&1]
		}
		y := (r.mt[623] & upper) | (r.mt[0] & lower)
		r.mt[623] = r.mt[396] ^ (y >> 1) ^ mag[y&1]
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random is random.random(): 53 random bits in [0, 1).
func (r *PyRandom) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// Uniform is random.uniform(a, b).
func (r *PyRandom) Uniform(a, b float64) float64 {
	return a + (b-a)*r.Random()
}

// GetRandBits is random.getrandbits(k) for 0 ≤ k ≤ 64.
func (r *PyRandom) GetRandBits(k int) uint64 {
	if k <= 0 {
		return 0
	}
	if k <= 32 {
		return uint64(r.Uint32() >> (32 - k))
	}
	lo := uint64(r.Uint32())
	hi := uint64(r.Uint32() >> (64 - k))
	return hi<<32 | lo
}

// Below is random._randbelow(n) (n > 0): getrandbits(n.bit_length())
// until the draw is below n.
func (r *PyRandom) Below(n int) int {
	k := bits.Len64(uint64(n))
	v := r.GetRandBits(k)
	for v >= uint64(n) {
		v = r.GetRandBits(k)
	}
	return int(v)
}

// Randrange is random.randrange(n) (n > 0).
func (r *PyRandom) Randrange(n int) int { return r.Below(n) }

// Shuffle is random.shuffle on a slice of n items, swapping with swap.
func (r *PyRandom) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := r.Below(i + 1)
		swap(i, j)
	}
}

// Sample is random.sample(range(n), k) as indices, for the set-size
// branch CPython takes for small k (n ≤ setsize): k draws of _randbelow(n),
// redrawing indices already taken.
func (r *PyRandom) Sample(n, k int) []int {
	setsize := 21
	if k > 5 {
		setsize += 1 << (2 * ceilLog4(k*3))
	}
	out := make([]int, k)
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := r.Below(n - i)
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out
	}
	seen := map[int]bool{}
	for i := 0; i < k; i++ {
		j := r.Below(n)
		for seen[j] {
			j = r.Below(n)
		}
		seen[j] = true
		out[i] = j
	}
	return out
}

// ceilLog4 is CPython's _ceil(_log(x, 4)).
func ceilLog4(x int) int {
	e := 0
	for p := 1; p < x; p *= 4 {
		e++
	}
	return e
}
