package scheduler

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Opt is Synergy-OPT (simulator/opt_algo/synergy_opt.py): each round one
// linear program chooses, for every job admitted this round, a mix of
// per-GPU (CPU, memory) configurations from its sensitivity matrix so as to
// maximise the total normalised throughput, subject to the cluster's free
// CPUs and memory (cluster-aggregate, as Synergy's first LP) and to no job
// doing worse than its GPU-proportional share. The LP objective is the
// round's upper bound (OptPlan.BoundThroughput).
//
// The LP answer is then turned into a placement, the upper-bound
// approximation documented on SolveOpt: each job is rounded to one grid
// configuration and placed best-fit; what does not fit falls back to the
// fair share and then to TUNE's peer reverting, so capacity is never
// exceeded and the realised throughput may fall short of the bound. Synergy
// solves a second (fractional) LP for placement and credits jobs without
// placing them; we place for real.
//
// Fixed defect of the original: its DRF/TETRIS/LAS/FTF schedulers build the
// solver with every per-server size set to the server's GPU count; Opt
// reads the free CPUs and memory of the round's actual cluster.
type Opt struct{}

func (Opt) Name() string    { return "opt" }
func (Opt) FairRates() bool { return false }

// Place implements Strategy for a single job (the LP over one job picks its
// best configuration that fits the free resources). Schedulers that can
// offer a whole round should call PlaceAll.
func (o Opt) Place(r *Round, j *Job) Decision { return o.PlaceAll(r, []*Job{j})[0] }

// PlaceAll implements BatchStrategy.
func (Opt) PlaceAll(r *Round, jobs []*Job) []Decision {
	plan, err := SolveOpt(r, jobs)
	out := make([]Decision, len(jobs))
	if err != nil {
		// No LP answer: place the admitted jobs as TUNE would, saying why.
		for i, j := range jobs {
			if j.GPUs > r.FreeGPUs() {
				out[i] = waitingForGPUs(r, j)
				continue
			}
			out[i] = Tune{}.Place(r, j)
			out[i].Note = "LP failed (" + err.Error() + "); " + out[i].Note
		}
		return out
	}
	plan.Apply(r, jobs, out)
	return out
}

// OptTarget is the configuration the LP chose for one admitted job.
type OptTarget struct {
	// Job is the index of the job in the list given to SolveOpt.
	Job int `json:"job"`
	// PerGPU is the CPU and memory per GPU of the job's rounded
	// configuration; Speedup its matrix value there.
	PerGPU  PerGPU  `json:"per_gpu"`
	Speedup float64 `json:"speedup"`
	// FairSpeedup is the job's value at the GPU-proportional share.
	FairSpeedup float64 `json:"fair_speedup"`
}

// OptPlan is one round's LP answer.
type OptPlan struct {
	// BoundThroughput is the LP objective: the most total normalised
	// throughput the admitted jobs could reach on the round's free CPUs and
	// memory taken as one pool (an upper bound for any placement of them).
	BoundThroughput float64 `json:"bound_throughput"`
	// FairThroughput is the same jobs' total at their fair share.
	FairThroughput float64 `json:"fair_throughput"`
	// Targets are the admitted jobs in offer order.
	Targets []OptTarget `json:"targets"`
	// Waiting are indices of jobs not admitted: not enough free GPUs.
	Waiting []int `json:"waiting,omitempty"`
	// Variables and Constraints size the LP that was solved (after
	// aggregating identical jobs and dropping dominated configurations).
	Variables   int `json:"lp_variables"`
	Constraints int `json:"lp_constraints"`
	// FairRelaxed is true when no mix gave every job its fair share on the
	// free resources and the LP was solved without that constraint.
	FairRelaxed bool `json:"fair_relaxed,omitempty"`
}

// optOption is one per-GPU configuration a job may run at.
type optOption struct {
	cpus, mem, speed float64
}

// optClass is a group of identical jobs (same matrix or scalars, same GPU
// count): the LP over k identical jobs aggregates exactly into one set of
// variables summing to k (any solution of the aggregate splits evenly).
type optClass struct {
	gpus    int
	opts    []optOption
	fair    float64 // value at the fair share
	members []int   // indices into the admitted list
	col     int     // first LP column
}

type optKey struct {
	matrix                 any
	gpus                   int
	cpus, mem, speed, iter float64
}

// SolveOpt admits jobs in order while their GPUs fit the round's free GPUs
// (Synergy's jobs_this_round), and solves Synergy's first LP over them:
//
//	maximise   Σ_j Σ_c speed_jc · y_jc
//	subject to Σ_c y_jc = 1                          for every job j
//	           Σ_j Σ_c gpus_j · cpus_c · y_jc ≤ free CPUs of the cluster
//	           Σ_j Σ_c gpus_j · mem_c  · y_jc ≤ free memory of the cluster
//	           Σ_c speed_jc · y_jc ≥ speed_j(fair share)  for every job j
//	           y ≥ 0
//
// with gonum's simplex (optimize/convex/lp). c runs over the job's grid
// cells (per-GPU CPUs and memory, speed = the matrix value, 1.0 at the fair
// share); a job without a matrix has two cells, its fair share (1.0) and its
// ideal demand (Speedup). Cells that do not fit the largest server for the
// job are dropped; a job wider than a server has only its fair share (as
// IdealDemand gives such jobs speed-up 1).
//
// To stay fast at thousands of jobs the LP is reduced without changing its
// optimum: identical jobs (same matrix and GPU count) share one set of
// variables, and cells dominated by another cell (no less CPU and memory,
// no more speed) are dropped. 2,048 zoo jobs make a few dozen classes and a
// few hundred variables. Distinct matrices each add their own variables
// (about 10 per job after the Pareto filter).
//
// The solution is rounded per class: ⌊y⌋ jobs to each cell, the remaining
// jobs to the fastest cell within the fractional mass's mean CPUs and
// memory that keeps the fair share (else the fair share), faster cells to
// jobs earlier in the order.
// That rounding and the later best-fit placement are why the realised
// throughput is an approximation below BoundThroughput.
func SolveOpt(r *Round, jobs []*Job) (*OptPlan, error) {
	plan := &OptPlan{}
	free := r.FreeGPUs()
	var admitted []int
	for i, j := range jobs {
		if j.GPUs <= free {
			admitted = append(admitted, i)
			free -= j.GPUs
		} else {
			plan.Waiting = append(plan.Waiting, i)
		}
	}
	if len(admitted) == 0 {
		return plan, nil
	}
	var pool Resources
	var maxCPU, maxMem float64
	maxGPUs := 0
	for i, s := range r.cluster.Servers {
		pool = pool.Add(r.Free(i))
		maxCPU = math.Max(maxCPU, s.CPUs)
		maxMem = math.Max(maxMem, float64(s.MemBytes))
		maxGPUs = max(maxGPUs, s.GPUs)
	}
	shape := r.shape
	var classes []*optClass
	index := map[optKey]int{}
	for a, ji := range admitted {
		j := jobs[ji]
		k := optKey{gpus: j.GPUs, cpus: j.IdealCPUsPerGPU, mem: j.IdealMemBytesPerGPU, speed: j.Speedup}
		if j.Matrix != nil {
			k = optKey{matrix: j.Matrix, gpus: j.GPUs}
		}
		ci, ok := index[k]
		if !ok {
			opts, fair := jobOptions(j, shape, maxGPUs, maxCPU, maxMem)
			ci = len(classes)
			index[k] = ci
			classes = append(classes, &optClass{gpus: j.GPUs, opts: opts, fair: fair})
		}
		classes[ci].members = append(classes[ci].members, a)
	}
	x, bound, relaxed, nvars, nrows, err := solveOptLP(classes, pool)
	if err != nil {
		return nil, err
	}
	plan.BoundThroughput, plan.FairRelaxed, plan.Variables, plan.Constraints = bound, relaxed, nvars, nrows
	plan.Targets = make([]OptTarget, len(admitted))
	for _, c := range classes {
		for m, o := range roundClass(c, x[c.col:c.col+len(c.opts)]) {
			a := c.members[m]
			plan.Targets[a] = OptTarget{Job: admitted[a], PerGPU: PerGPU{CPUs: o.cpus, MemBytes: o.mem}, Speedup: o.speed, FairSpeedup: c.fair}
			plan.FairThroughput += c.fair
		}
	}
	return plan, nil
}

// jobOptions lists a job's configurations (Pareto-optimal cells that fit a
// server) and its value at the fair share. Units: CPUs and bytes per GPU.
func jobOptions(j *Job, s Shape, maxGPUs int, maxCPU, maxMem float64) ([]optOption, float64) {
	fair := 1.0
	if j.Matrix != nil {
		fair, _ = j.Matrix.At(s.Fair.CPUs, s.Fair.MemBytes)
	}
	fairOpt := optOption{cpus: s.Fair.CPUs, mem: s.Fair.MemBytes, speed: fair}
	if j.GPUs > maxGPUs {
		return []optOption{fairOpt}, fair
	}
	g := float64(j.GPUs)
	fits := func(o optOption) bool { return g*o.cpus <= maxCPU && g*o.mem <= maxMem }
	cand := []optOption{fairOpt}
	if j.Matrix != nil {
		m := j.Matrix
		for i, c := range m.CPUs {
			for k, b := range m.MemBytes {
				cand = append(cand, optOption{cpus: c, mem: b, speed: m.Values[i][k]})
			}
		}
	} else {
		d := IdealDemand(j, s)
		per := perGPUOf(d.Ideal)
		cand = append(cand, optOption{cpus: per.CPUs, mem: per.MemBytes, speed: d.Speedup})
	}
	var kept []optOption
	for _, o := range cand {
		if fits(o) {
			kept = append(kept, o)
		}
	}
	return pareto(kept), fair
}

// pareto drops dominated options (another has no more CPUs and memory and
// no less speed, and is better in one) and duplicates; the rest are sorted
// by CPUs, then memory.
func pareto(opts []optOption) []optOption {
	sort.SliceStable(opts, func(a, b int) bool {
		if opts[a].cpus != opts[b].cpus {
			return opts[a].cpus < opts[b].cpus
		}
		if opts[a].mem != opts[b].mem {
			return opts[a].mem < opts[b].mem
		}
		return opts[a].speed > opts[b].speed
	})
	var out []optOption
	for i, o := range opts {
		dominated := false
		for k, p := range opts {
			if k == i {
				continue
			}
			if p.cpus <= o.cpus && p.mem <= o.mem && p.speed >= o.speed &&
				(p.cpus < o.cpus || p.mem < o.mem || p.speed > o.speed || k < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, o)
		}
	}
	return out
}

// errNoLP says the LP had no solution even without the fair-share rows.
var errNoLP = errors.New("no configuration mix fits the free CPUs and memory")

// solveOptLP builds the aggregated LP in standard form (A·x = b, x ≥ 0) and
// solves it; capacity rows are divided by the pool so coefficients are
// fractions of the cluster (well conditioned whatever the units). It
// returns the option variables (x[c.col:]), the objective, whether the fair
// rows had to be dropped, and the LP's size.
func solveOptLP(classes []*optClass, pool Resources) (x []float64, bound float64, relaxed bool, nvars, nrows int, err error) {
	nopt := 0
	for _, c := range classes {
		c.col = nopt
		nopt += len(c.opts)
	}
	for _, withFair := range []bool{true, false} {
		nc := len(classes)
		rows := nc + 2
		cols := nopt + 2
		if withFair {
			rows += nc
			cols += nc
		}
		A := mat.NewDense(rows, cols, nil)
		b := make([]float64, rows)
		cost := make([]float64, cols)
		for ci, c := range classes {
			k := float64(len(c.members))
			g := float64(c.gpus)
			b[ci] = k
			for oi, o := range c.opts {
				col := c.col + oi
				cost[col] = -o.speed
				A.Set(ci, col, 1)
				A.Set(nc, col, g*o.cpus/pool.CPUs)
				A.Set(nc+1, col, g*o.mem/pool.MemBytes)
				if withFair {
					A.Set(nc+2+ci, col, o.speed)
				}
			}
			if withFair {
				// Σ speed·y − surplus = k·fair
				A.Set(nc+2+ci, nopt+2+ci, -1)
				b[nc+2+ci] = k * c.fair
			}
		}
		A.Set(nc, nopt, 1)     // CPU slack
		A.Set(nc+1, nopt+1, 1) // memory slack
		b[nc], b[nc+1] = 1, 1
		if !(pool.CPUs > 0) || !(pool.MemBytes > 0) {
			return nil, 0, false, cols, rows, errNoLP
		}
		opt, sol, serr := lp.Simplex(cost, A, b, 1e-10, nil)
		if serr == nil {
			return sol[:nopt], -opt, !withFair, cols, rows, nil
		}
		if errors.Is(serr, lp.ErrInfeasible) {
			continue
		}
		return nil, 0, false, cols, rows, fmt.Errorf("simplex over %d variables and %d constraints: %w", cols, rows, serr)
	}
	return nil, 0, false, 0, 0, errNoLP
}

// roundClass turns a class's LP variables y (summing to its k members) into
// one option per member, in member order: ⌊y_c⌋ members to each option;
// the remaining members share the fractional mass, so each takes the
// fastest option, at least as fast as the fair share, that costs no more
// CPUs and memory than the mass's mean per member (else the fair share).
// Faster options go to earlier members.
func roundClass(c *optClass, y []float64) []optOption {
	const eps = 1e-7
	k := len(c.members)
	out := make([]optOption, 0, k)
	var fracCPU, fracMem float64
	for i, o := range c.opts {
		whole := math.Floor(y[i] + eps)
		for n := int(whole); n > 0 && len(out) < k; n-- {
			out = append(out, o)
		}
		if f := y[i] - whole; f > eps {
			fracCPU += f * o.cpus
			fracMem += f * o.mem
		}
	}
	if rest := k - len(out); rest > 0 {
		meanCPU, meanMem := fracCPU/float64(rest), fracMem/float64(rest)
		pick := c.fairOption()
		for _, o := range c.opts {
			if o.speed >= c.fair && o.speed > pick.speed && o.cpus <= meanCPU+eps && o.mem <= meanMem*(1+eps) {
				pick = o
			}
		}
		for len(out) < k {
			out = append(out, pick)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].speed > out[b].speed })
	return out
}

// fairOption is the class's fair-share option (the first option at the
// fair value with the least resources), or the cheapest option.
func (c *optClass) fairOption() optOption {
	for _, o := range c.opts {
		if o.speed >= c.fair {
			return o
		}
	}
	return c.opts[len(c.opts)-1]
}

// Apply places the plan's targets on r and fills out (one decision per
// job given to SolveOpt). Jobs are placed widest first, then by how far
// their configuration exceeds the fair share (CPU and memory, as fractions
// of a server), each on the server with the most surplus over the fair
// share of its free GPUs (a single server when one holds the job); a target
// that does not fit falls back to the fair share, then to TUNE's peer
// reverting; nothing is ever placed beyond a server's capacity.
func (p *OptPlan) Apply(r *Round, jobs []*Job, out []Decision) {
	for _, i := range p.Waiting {
		j := jobs[i]
		out[i] = waitingForGPUs(r, j)
	}
	order := make([]int, len(p.Targets))
	for k := range order {
		order[k] = k
	}
	fair := r.shape.Fair
	per := r.shape.PerServer
	surplus := func(t OptTarget) float64 {
		return (t.PerGPU.CPUs-fair.CPUs)/per.CPUs + (t.PerGPU.MemBytes-fair.MemBytes)/per.MemBytes
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := p.Targets[order[a]], p.Targets[order[b]]
		ja, jb := jobs[ta.Job], jobs[tb.Job]
		if ja.GPUs != jb.GPUs {
			return ja.GPUs > jb.GPUs
		}
		return surplus(ta) > surplus(tb)
	})
	for _, k := range order {
		t := p.Targets[k]
		j := jobs[t.Job]
		out[t.Job] = placeTarget(r, j, t)
	}
}

func placeTarget(r *Round, j *Job, t OptTarget) Decision {
	note := fmt.Sprintf("LP configuration (%s CPUs, %s per GPU)", num(t.PerGPU.CPUs), gbs(t.PerGPU.MemBytes))
	if servers, ok := r.placeRanked(t.PerGPU, j.GPUs, r.surplusScore); ok {
		p := r.commit(j, Demand{Ideal: t.PerGPU.Times(j.GPUs), Speedup: t.Speedup}, servers, t.Speedup, false)
		return Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: note}
	}
	short := r.explain(t.PerGPU, j.GPUs)
	fair := r.shape.Fair
	if t.PerGPU != fair {
		if servers, ok := r.placeRanked(fair, j.GPUs, r.surplusScore); ok {
			speed := t.FairSpeedup
			p := r.commit(j, Demand{Ideal: fair.Times(j.GPUs), Speedup: speed}, servers, speed, true)
			return Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: note + " did not fit: fair share", Shortfalls: short}
		}
	}
	d := Tune{}.Place(r, j)
	d.Note = note + " did not fit: " + d.Note
	if d.Placed {
		d.Shortfalls = short
	}
	return d
}
