// Command allocmp runs one of our Gavel policies on exactly the inputs that
// Gavel's own policy was given (the JSON lines that run_gavel.py or
// run_gavel_generated.py write with --dump-alloc, see gavel_observe.py) and
// prints, per recorded allocation, the largest and mean |X_gavel - X_ours|
// and the GPUs of each type that each side allocates (Σ scale factor × X).
// It separates "the LP lands elsewhere" from "the mechanism or the state
// differs": the inputs are the same by construction.
//
//	go run ./scheduler/gavel/testdata/reference/allocmp POLICY FILE [-v]
//
// (testdata: not built by ./..., not part of the module's API.)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"

	"github.com/synergy-sched/synergy/scheduler/gavel"
)

type rec struct {
	N       int      `json:"n"`
	T       float64  `json:"t"`
	Types   []string `json:"types"`
	Workers []int    `json:"workers"`
	Jobs    []struct {
		ID         int       `json:"id"`
		SF         int       `json:"sf"`
		PW         float64   `json:"pw"`
		Remaining  float64   `json:"remaining"`
		SinceStart float64   `json:"since_start"`
		Tput       []float64 `json:"tput"`
	} `json:"jobs"`
	X map[string][]float64 `json:"X"`
}

func main() {
	policy, path := os.Args[1], os.Args[2]
	verbose := len(os.Args) > 3
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<20), 64<<20)
	p, err := gavel.NewPolicy(policy, 0, false)
	if err != nil {
		panic(err)
	}
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			panic(err)
		}
		st := &gavel.State{Types: r.Types, Workers: r.Workers, Now: r.T}
		for _, j := range r.Jobs {
			st.Jobs = append(st.Jobs, gavel.StateJob{ID: j.ID, Throughput: j.Tput, ScaleFactor: j.SF,
				PriorityWeight: j.PW, RemainingSteps: j.Remaining, TotalSteps: j.Remaining, TimeSinceStart: j.SinceStart})
		}
		a, err := p.Allocate(st)
		if err != nil {
			fmt.Printf("n=%d t=%.0f: error %v\n", r.N, r.T, err)
			continue
		}
		maxd, sumd := 0.0, 0.0
		var worst int
		ids := []int{}
		for k := range r.X {
			id, _ := strconv.Atoi(k)
			ids = append(ids, id)
		}
		sort.Ints(ids)
		// objective: min over jobs of normalised effective throughput, both sides
		for _, id := range ids {
			g := r.X[strconv.Itoa(id)]
			o := a[id]
			for t := range g {
				var ov float64
				if o != nil {
					ov = o[t]
				}
				d := math.Abs(g[t] - ov)
				sumd += d
				if d > maxd {
					maxd, worst = d, id
				}
			}
		}
		gu, ou := make([]float64, len(r.Types)), make([]float64, len(r.Types))
		for _, j := range r.Jobs {
			g := r.X[strconv.Itoa(j.ID)]
			for t := range r.Types {
				gu[t] += g[t] * float64(j.SF)
				if o := a[j.ID]; o != nil {
					ou[t] += o[t] * float64(j.SF)
				}
			}
		}
		gm, om := maxMinLevel(&r, policy, r.X, nil), maxMinLevel(&r, policy, nil, a)
		fmt.Printf("n=%d t=%.0f jobs=%d max|dX|=%.4f (job %d) mean|dX|=%.5f used gavel %.2f ours %.2f max-min level gavel %.6g ours %.6g\n",
			r.N, r.T, len(r.Jobs), maxd, worst, sumd/float64(len(ids)*len(r.Types)), gu, ou, gm, om)
		if verbose && maxd > 1e-3 {
			for _, id := range ids {
				fmt.Printf("  job %d gavel %.4f ours %.4f\n", id, r.X[strconv.Itoa(id)], a[id])
			}
		}
	}
}

// maxMinLevel is the max-min objective of an allocation (Gavel's
// max_min_fairness.py): min over jobs of Σ_j c_mj·X_mj with c_mj = T_mj·sf /
// (priority weight · proportional throughput), T = 1 for the agnostic
// policy; proportional throughput = Σ_j T_mj·W_j / Σ_j W_j. NaN for other
// policies.
func maxMinLevel(r *rec, policy string, gx map[string][]float64, ox gavel.Allocation) float64 {
	if policy != "max_min_fairness" && policy != "max_min_fairness_perf" {
		return math.NaN()
	}
	total := 0
	for _, w := range r.Workers {
		total += w
	}
	level := math.Inf(1)
	for _, j := range r.Jobs {
		x := ox[j.ID]
		if gx != nil {
			x = gx[strconv.Itoa(j.ID)]
		}
		t := make([]float64, len(r.Types))
		prop := 0.0
		for k := range t {
			t[k] = j.Tput[k]
			if policy == "max_min_fairness" {
				t[k] = 1
			}
			prop += t[k] * float64(r.Workers[k]) / float64(total)
		}
		v := 0.0
		for k := range t {
			if x != nil {
				v += t[k] * float64(j.SF) / (j.PW * prop) * x[k]
			}
		}
		level = math.Min(level, v)
	}
	return level
}
