package gavel

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// gandivaState is jobs ids (scale factor 2 for every fifth id, else 1) on 2+2 GPUs, with the
// pairs the simulator lists: every two jobs of one scale factor, by (b, a). A pair packs at
// 20 % of each job's throughput when a+b is a multiple of 3 (normalised 0.8 summed over the
// types: forget drops it), else at 60 % (2.4: kept).
func gandivaState(ids []int) (*State, []PairState) {
	s := &State{Types: []string{"k80", "v100"}, Workers: []int{2, 2}}
	for _, id := range ids {
		sf := 1
		if id%5 == 0 {
			sf = 2
		}
		s.Jobs = append(s.Jobs, StateJob{ID: id, Throughput: []float64{1 + float64(id%4), 3 + float64(id%7)}, ScaleFactor: sf, PriorityWeight: 1})
	}
	var pairs []PairState
	for bi, b := range s.Jobs {
		for _, a := range s.Jobs[:bi] {
			if a.ScaleFactor != b.ScaleFactor {
				continue
			}
			f := 0.6
			if (a.ID+b.ID)%3 == 0 {
				f = 0.2
			}
			p := PairState{A: a.ID, B: b.ID}
			for t := range s.Types {
				p.Throughput = append(p.Throughput, [2]float64{f * a.Throughput[t], f * b.Throughput[t]})
			}
			pairs = append(pairs, p)
		}
	}
	return s, pairs
}

func idRange(lo, hi int) []int {
	var ids []int
	for id := lo; id < hi; id++ {
		ids = append(ids, id)
	}
	return ids
}

// gandiva's sparse allocation (what the simulator asks for: pairs looked up, zero pair rows left
// out) is its full one less the zero rows, over jobs leaving, arriving, none changing, all
// fitting the cluster (4 GPUs, 4 asked) and over it again, with the same random draws: every
// listed pair has a row in the full one, and a pair not listed gets one only as a combination
// (non-zero). The same holds for a list in another order (the pair lookup's fallback) and for a
// list short of pairs.
func TestGandiva_SparseAllocationIsTheFullOneLessZeroRows(t *testing.T) {
	steps := [][]int{idRange(0, 12), idRange(2, 15), idRange(2, 15), {6, 7, 8, 9}, idRange(5, 21), append(idRange(9, 21), 30, 31)}
	lists := map[string]func([]PairState) []PairState{
		"listed in order": func(p []PairState) []PairState { return p },
		"listed reversed": func(p []PairState) []PairState { p = slices.Clone(p); slices.Reverse(p); return p },
		"every third left out": func(p []PairState) []PairState {
			var out []PairState
			for i, pr := range p {
				if i%3 != 0 {
					out = append(out, pr)
				}
			}
			return out
		},
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			full := &gandivaPolicy{rng: NewPyRandom(3), assigned: map[int]gandivaComb{}}
			sparse := &gandivaPolicy{rng: NewPyRandom(3), assigned: map[int]gandivaComb{}}
			paired := 0
			for i, ids := range steps {
				s, all := gandivaState(ids)
				pairs := list(all)
				single, packed, err := full.AllocatePacked(s, pairs)
				if err != nil {
					t.Fatal(err)
				}
				byKey := map[[2]int][][2]float64{}
				for _, p := range pairs {
					byKey[[2]int{p.A, p.B}] = p.Throughput
				}
				sSingle, sPacked, err := sparse.allocateSparse(s, func(a, b int) ([][2]float64, bool) {
					tp, ok := byKey[[2]int{a, b}]
					return tp, ok
				})
				if err != nil {
					t.Fatal(err)
				}
				nonZeroRows := map[[2]int][]float64{}
				for k, row := range packed {
					if rowSum(row) > 0 {
						nonZeroRows[k] = row
					}
				}
				if !reflect.DeepEqual(single, sSingle) || !reflect.DeepEqual(nonZeroRows, sPacked) {
					t.Fatalf("step %d (jobs %v): full allocation's non-zero rows\n%v %v\nsparse allocation\n%v %v", i, ids, single, nonZeroRows, sSingle, sPacked)
				}
				listed := map[[2]int]bool{}
				for _, p := range pairs {
					listed[[2]int{p.A, p.B}] = true
					if packed[[2]int{p.A, p.B}] == nil {
						t.Errorf("step %d: listed pair (%d, %d) has no row", i, p.A, p.B)
					}
				}
				for k, row := range packed {
					if rowSum(row) > 0 {
						paired++
					} else if !listed[k] {
						t.Errorf("step %d: pair %v is not listed and has a zero row", i, k)
					}
				}
			}
			if paired == 0 {
				t.Error("no pair ever got time")
			}
		})
	}
}

// TestSimulator_LazyPairsAreTheEagerOnes runs gandiva with its pair entries made lazily (only
// when a pair gets a row or is picked, the default) and eagerly (at each arrival, with every
// active job of its scale factor) on the made-up pair throughputs: the results must be the same,
// static and continuous, on a cluster small enough that the selection's fallback (GPUs left,
// jobs unscheduled) takes pairs without a row.
func TestSimulator_LazyPairsAreTheEagerOnes(t *testing.T) {
	base, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	tp := withPairs(base)
	spec, err := ParseClusterSpec("8:8:8", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name   string
		gen    GeneratorConfig
		window *simcore.Window
	}{
		{"static", GeneratorConfig{NumJobs: 40, MultiGPU: true}, nil},
		{"continuous", GeneratorConfig{MeanInterarrivalS: 3600 / 0.5, MultiGPU: true}, &simcore.Window{First: 0, Last: 29}},
	} {
		var res [2]*simcore.Result
		for i, lazy := range []bool{true, false} {
			g, err := NewGenerator(w.gen, tp)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPolicy("gandiva", 0, false)
			if err != nil {
				t.Fatal(err)
			}
			s := newSimulator(Config{Cluster: spec, Window: w.window}, p)
			if !s.lazy {
				t.Fatal("gandiva without an estimator: pair entries not lazy")
			}
			s.lazy = lazy
			if err := s.loop(context.Background(), tp, Workload{Generator: g}); err != nil {
				t.Fatal(err)
			}
			res[i] = s.summarise()
		}
		if !reflect.DeepEqual(res[0], res[1]) {
			t.Errorf("%s: lazy pairs give mean JCT %.6g h, eager ones %.6g h (results differ)", w.name, res[0].MeanJCTS/3600, res[1].MeanJCTS/3600)
		}
		if res[0].NumJobs == 0 {
			t.Errorf("%s: no jobs", w.name)
		}
	}
}
