package gavel

import "testing"

// The expected values were printed by CPython 3.11.2 (Debian 12):
//
//	r = random.Random(0); [r.getrandbits(32) for _ in range(3)], r.random()
//	r = random.Random(5); r.randrange(3), r.randrange(2), r.uniform(1.5, 3)
//	r = random.Random(7); x = list(range(3)); r.shuffle(x); x, r.sample(range(10), 2), r.sample(range(30), 2)
//	random.Random(2**40 + 3).random()
func TestPyRandomMatchesCPython(t *testing.T) {
	r := NewPyRandom(0)
	for i, want := range []uint32{3626764237, 1654615998, 3255389356} {
		if got := r.Uint32(); got != want {
			t.Fatalf("seed 0 draw %d = %d, want %d", i, got, want)
		}
	}
	if got := r.Random(); got != 0.890243920837131 {
		t.Fatalf("seed 0 random() = %v", got)
	}
	r = NewPyRandom(5)
	if a, b, u := r.Randrange(3), r.Randrange(2), r.Uniform(1.5, 3); a != 2 || b != 1 || u != 2.612680483891094 {
		t.Fatalf("seed 5: randrange %d %d uniform %v", a, b, u)
	}
	r = NewPyRandom(7)
	x := []int{0, 1, 2}
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	if x[0] != 2 || x[1] != 0 || x[2] != 1 {
		t.Fatalf("seed 7 shuffle = %v", x)
	}
	if s := r.Sample(10, 2); s[0] != 6 || s[1] != 0 {
		t.Fatalf("sample(10,2) = %v", s)
	}
	if s := r.Sample(30, 2); s[0] != 2 || s[1] != 26 {
		t.Fatalf("sample(30,2) = %v", s)
	}
	if got := NewPyRandom(1<<40 + 3).Random(); got != 0.21978710637116716 {
		t.Fatalf("seed 2**40+3 random() = %v", got)
	}
}
