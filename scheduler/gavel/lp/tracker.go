package lp

// FTFTracker keeps the state that Gavel's FinishTimeFairnessPolicyWithPerf keeps between
// allocations (finish_time_fairness.py): each job's cumulative isolated time, and the previous
// solve's remaining steps and isolated throughputs. Use one tracker per simulation and call its
// Solve instead of Solve for the finish-time-fairness policies; it fills CumulativeIsolatedTime.
//
// Gavel's rule, before each solve and for every job that was in the previous solve:
// cumulative += (remaining_prev − remaining_now) / isolated_throughput_prev. New jobs start at 0.
type FTFTracker struct {
	cum       map[int]float64
	prevSteps map[int]float64
	prevIso   map[int]float64
}

// NewFTFTracker returns a tracker with no history.
func NewFTFTracker() *FTFTracker {
	return &FTFTracker{cum: map[int]float64{}}
}

// CumulativeIsolatedTime returns a job's cumulative isolated time so far (0 if unknown).
func (t *FTFTracker) CumulativeIsolatedTime(jobID int) float64 { return t.cum[jobID] }

// Solve updates the cumulative isolated times from the previous solve, solves the named
// finish-time-fairness policy on p with them, and records this solve for the next one. p's
// CumulativeIsolatedTime fields are ignored (and p is not modified).
func (t *FTFTracker) Solve(policy string, p Problem, opts Options) (Allocation, error) {
	if policy != FinishTimeFairness && policy != FinishTimeFairnessPerf {
		return Solve(policy, p, opts)
	}
	if err := validate(&p, policy, opts); err != nil {
		return nil, err
	}
	if len(p.Jobs) == 0 {
		t.prevSteps, t.prevIso = nil, nil
		return Allocation{}, nil
	}
	p.Jobs = t.advance(p.Jobs)
	x, err := Solve(policy, p, opts)
	t.record(p.Jobs, isolatedThroughputs(throughputsFor(policy, &p, opts), &p))
	return x, err
}

// SolvePacked is Solve for the packing policies: finish_time_fairness_packed keeps the same
// cumulative isolated time (Gavel's FinishTimeFairnessPolicyWithPacking keeps it as the
// unpacked policy does, from the isolated throughputs of the jobs' own rows); the other
// packing policies go to SolvePacked as they are.
func (t *FTFTracker) SolvePacked(policy string, p PackedProblem, opts Options) (PackedSolution, error) {
	if policy != FinishTimeFairnessPacked {
		return SolvePacked(policy, p, opts)
	}
	if err := validate(&p.Problem, MaxMinFairnessPerf, opts); err != nil {
		return PackedSolution{}, err
	}
	if len(p.Jobs) == 0 {
		t.prevSteps, t.prevIso = nil, nil
		return SolvePacked(policy, p, opts)
	}
	p.Jobs = t.advance(p.Jobs)
	sol, err := SolvePacked(policy, p, opts)
	t.record(p.Jobs, isolatedThroughputs(p.throughputs(), &p.Problem))
	return sol, err
}

// advance applies Gavel's rule to a copy of jobs: each job of the previous
// solve adds the steps it made since, at its isolated throughput then, to
// its cumulative isolated time; every job carries its time.
func (t *FTFTracker) advance(jobs []Job) []Job {
	jobs = append([]Job(nil), jobs...)
	for i := range jobs {
		jb := &jobs[i]
		if prev, ok := t.prevSteps[jb.ID]; ok && t.prevIso[jb.ID] > 0 {
			t.cum[jb.ID] += (prev - jb.RemainingSteps) / t.prevIso[jb.ID]
		}
		jb.CumulativeIsolatedTime = t.cum[jb.ID]
	}
	return jobs
}

// record keeps this solve's remaining steps and isolated throughputs (iso,
// per job) for the next one.
func (t *FTFTracker) record(jobs []Job, iso []float64) {
	t.prevSteps, t.prevIso = map[int]float64{}, map[int]float64{}
	for i, jb := range jobs {
		t.prevSteps[jb.ID] = jb.RemainingSteps
		t.prevIso[jb.ID] = iso[i]
	}
}
