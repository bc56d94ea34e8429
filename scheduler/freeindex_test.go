package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// walkNext is what freeIndex.next stands for: the first server at index ≥
// from, in a walk over all of them, with at least gpus free GPUs, cpus
// free CPUs and mem free memory.
func walkNext(r *Round, from, gpus int, cpus, mem float64) int {
	for i := from; i < len(r.cluster.Servers); i++ {
		if f := r.Free(i); f.GPUs >= gpus && f.CPUs >= cpus && f.MemBytes >= mem {
			return i
		}
	}
	return -1
}

// walkFewest is what freeIndex.fewestFree stands for.
func walkFewest(r *Round) int {
	best := -1
	for i := range r.cluster.Servers {
		if g := r.Free(i).GPUs; g > 0 && (best < 0 || g < r.Free(best).GPUs) {
			best = i
		}
	}
	return best
}

// walkFirstFit is Synergy's _top_synergy_gpus as a walk over every
// server (firstFit before the index).
func walkFirstFit(r *Round, per PerGPU, n int) ([]ServerAlloc, bool) {
	var out []ServerAlloc
	got := 0
	for i := range r.cluster.Servers {
		f := r.Free(i)
		var hc, hm float64
		k := 0
		for k < f.GPUs && got < n && f.CPUs-hc >= per.CPUs && f.MemBytes-hm >= per.MemBytes {
			hc += per.CPUs
			hm += per.MemBytes
			k++
			got++
		}
		if k > 0 {
			out = append(out, ServerAlloc{Server: i, GPUs: k, CPUs: hc, MemBytes: hm})
		}
	}
	return out, got == n
}

// TestFreeIndex_MatchesWalk takes and gives back random allocations on
// random clusters (servers of 1–8 GPUs, 4–64 CPUs, 50–1000 GB, with
// fractional CPU and memory amounts as TUNE's reverts make) and checks
// after every change that every search of the index finds what a walk over
// all servers finds, and that firstFit returns what the walk does, for
// shares asked for once and for shares asked for again (which start from
// the round's hints).
func TestFreeIndex_MatchesWalk(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := Cluster{Name: "random"}
		for i := range 1 + rng.IntN(70) {
			c.Servers = append(c.Servers, Server{Name: fmt.Sprintf("s%d", i), GPUs: 1 + rng.IntN(8),
				CPUs: float64(4 + rng.IntN(61)), MemBytes: int64(50+rng.IntN(951)) * 1e9})
		}
		r := NewRound(&c)
		var held []ServerAlloc
		shares := []PerGPU{{CPUs: 3, MemBytes: 62.5e9}, {CPUs: 6, MemBytes: 30e9}, {CPUs: 1.5, MemBytes: 125e9}}
		for step := range 400 {
			if len(held) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(held))
				r.give(held[k])
				held = append(held[:k], held[k+1:]...)
			} else {
				i := rng.IntN(len(c.Servers))
				f := r.Free(i)
				if f.GPUs > 0 {
					g := 1 + rng.IntN(f.GPUs)
					sa := ServerAlloc{Server: i, GPUs: g, CPUs: f.CPUs * rng.Float64(), MemBytes: f.MemBytes * rng.Float64()}
					if rng.IntN(2) == 0 { // whole shares, so that free amounts often equal a demand
						sa.CPUs = min(f.CPUs, float64(rng.IntN(24)))
						sa.MemBytes = min(f.MemBytes, float64(rng.IntN(24))*62.5e9)
					}
					r.take(sa)
					held = append(held, sa)
				}
			}
			for range 5 {
				from := rng.IntN(len(c.Servers) + 1)
				gpus := 1 + rng.IntN(8)
				cpus, mem := rng.Float64()*40, rng.Float64()*600e9
				switch rng.IntN(4) {
				case 0:
					cpus, mem = math.Inf(-1), math.Inf(-1)
				case 1:
					cpus, mem = float64(rng.IntN(40)), float64(rng.IntN(12))*62.5e9
				}
				if got, want := r.free.next(from, gpus, cpus, mem), walkNext(r, from, gpus, cpus, mem); got != want {
					t.Fatalf("seed %d step %d: next(%d, %d, %.3g, %.3g) = %d, a walk finds %d", seed, step, from, gpus, cpus, mem, got, want)
				}
				per := PerGPU{CPUs: rng.Float64() * 12, MemBytes: rng.Float64() * 200e9}
				switch rng.IntN(3) {
				case 0:
					per = PerGPU{CPUs: float64(1 + rng.IntN(12)), MemBytes: float64(rng.IntN(4)) * 62.5e9}
				case 1:
					// A share asked for again: firstFit starts from its
					// hint, which the takes and gives since must not
					// have made wrong.
					per = shares[rng.IntN(len(shares))]
				}
				n := 1 + rng.IntN(12)
				got, ok := r.firstFit(per, n)
				want, wok := walkFirstFit(r, per, n)
				if ok != wok || fmt.Sprint(got) != fmt.Sprint(want) && ok {
					t.Fatalf("seed %d step %d: firstFit(%v, %d) = %v %v, a walk gives %v %v", seed, step, per, n, got, ok, want, wok)
				}
			}
			if got, want := r.free.fewestFree(), walkFewest(r); got != want {
				t.Fatalf("seed %d step %d: fewestFree = %d, a walk finds %d", seed, step, got, want)
			}
		}
		r.Reset()
		if got, want := r.free.next(0, 1, 0, 0), walkNext(r, 0, 1, 0, 0); got != want || r.FreeGPUs() != c.Totals().GPUs {
			t.Fatalf("seed %d: after Reset next = %d (walk %d), %d GPUs free of %d", seed, got, want, r.FreeGPUs(), c.Totals().GPUs)
		}
	}
}

// TestRound_ResetReusesRound checks that a reset round places as a new one
// does: the same jobs on a reused round and on a fresh round give the same
// allocations, TUNE's reverts included.
func TestRound_ResetReusesRound(t *testing.T) {
	c := Homogeneous("c", 3, 8, 24, 500e9)
	var jobs []*Job
	for i, m := range []string{"alexnet", "res18", "m5", "gnmt", "alexnet", "m5"} {
		for k := range 4 {
			jobs = append(jobs, zooJob(10*i+k, m, 1+k%2))
		}
	}
	place := func(r *Round) string {
		for _, j := range jobs {
			if j.GPUs <= r.FreeGPUs() {
				Tune{}.Place(r, j)
			}
		}
		return fmt.Sprint(r.Allocations())
	}
	reused := NewRound(&c)
	place(reused)
	reused.Reset()
	got, want := place(reused), place(NewRound(&c))
	if got != want {
		t.Fatalf("reset round: %s\nnew round: %s", got, want)
	}
	if !containsReverted(reused.Allocations()) {
		t.Fatalf("no job was reverted: the check does not reach TUNE's revert step")
	}
}

func containsReverted(as []Allocation) bool {
	for _, a := range as {
		if a.Reverted {
			return true
		}
	}
	return false
}

// TestReserve_RefusesNegativeAmounts: a reservation may only take
// resources (first fit's hints and the free index assume so); a negative
// amount, which would give some back, is refused.
func TestReserve_RefusesNegativeAmounts(t *testing.T) {
	c := Homogeneous("c", 2, 8, 24, 500e9)
	r := NewRound(&c)
	for _, sa := range []ServerAlloc{{Server: 0, GPUs: -1}, {Server: 0, CPUs: -24}, {Server: 0, MemBytes: -1}, {Server: 0, CPUs: math.NaN()}} {
		if err := r.Reserve(&Job{ID: -1}, Allocation{JobID: -1, Servers: []ServerAlloc{sa}}); err == nil {
			t.Errorf("Reserve(%+v) accepted", sa)
		}
	}
	if r.Used(0) != (Resources{}) {
		t.Errorf("a refused reservation used %+v", r.Used(0))
	}
}
