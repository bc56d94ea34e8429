package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// summarise is the run's simcore.Result by Synergy's rules: the common
// figures over the window's finished jobs, utilisation as the allocated GPU
// share over the window's span, and Synergy's extras (queueing delay, the
// allocated GPU/CPU/memory shares over the span and per hour).
func summarise(cfg Config, src Source, fin *doneLog, arrived, rounds int, end float64, u *utilAcc) *simcore.Result {
	w := cfg.Window
	res := &simcore.Result{
		Engine: simcore.EngineSynergy, Cluster: cfg.Cluster.Name, GPUs: cfg.Cluster.Totals().GPUs,
		Strategy: cfg.Strategy.Name(), Policy: cfg.Policy.Name(), Workload: src.Describe(),
		RoundS: cfg.RoundSeconds, Window: &w, Rounds: rounds, EndS: end, NumJobs: arrived,
		Jobs: []simcore.JobRecord{},
	}
	// The window's jobs get records (Tally's), in id order; every finished
	// job's JCT makes the all-jobs summary (which sorts them: their order
	// does not matter).
	every := make([]float64, 0, fin.n)
	var inWindow []done
	fin.each(func(d *done) {
		every = append(every, d.finish-d.arrival)
		if w.Has(d.id) {
			inWindow = append(inWindow, *d)
		}
	})
	slices.SortFunc(inWindow, func(a, b done) int { return cmp.Compare(a.id, b.id) })
	var wait []float64
	for _, d := range inWindow {
		r := simcore.Finished(d.id, d.arrival, d.start, d.finish)
		r.Model, r.GPUs = d.model, d.gpus
		res.Jobs = append(res.Jobs, r)
		wait = append(wait, d.start-d.arrival)
	}
	jct, first, last := res.Tally(res.Jobs)
	res.AllJobs = simcore.Summarise(every)
	// Synergy's mean is its summary's (summed in sorted order).
	res.MeanJCTS = res.JCT.MeanHours * 3600
	q := simcore.Summarise(wait)
	res.QueueingDelay = &q
	shares := simcore.UtilPoint{}
	if len(jct) > 0 {
		shares = average(u.points, first, last)
	}
	res.Shares, res.Utilization = &shares, shares.GPUPct/100
	res.SharesHourly = hourly(u.points)
	return res
}

// average is the time-weighted mean of points over [from, to).
func average(points []simcore.UtilPoint, from, to float64) simcore.UtilPoint {
	out := simcore.UtilPoint{StartS: from, EndS: to}
	span := 0.0
	for _, p := range points {
		lo, hi := math.Max(p.StartS, from), math.Min(p.EndS, to)
		if hi <= lo {
			continue
		}
		w := hi - lo
		span += w
		out.GPUPct += w * p.GPUPct
		out.CPUPct += w * p.CPUPct
		out.MemPct += w * p.MemPct
	}
	if span > 0 {
		out.GPUPct /= span
		out.CPUPct /= span
		out.MemPct /= span
	}
	return out
}

// maxSharePoints caps the points of a run's allocation series
// (SharesHourly): a run spanning more hours (an arrival at 1e12 s, a job
// of 1e15 iterations) gets one point per several hours, as many as its
// span needs to fit, instead of asking for gigabytes at once. 2^18 hours is
// 30 years of simulated time; each point says the span it averages.
const maxSharePoints = 1 << 18

// hourly averages points per hour of simulated time (per several hours
// when the run spans more than maxSharePoints hours).
func hourly(points []simcore.UtilPoint) []simcore.UtilPoint {
	if len(points) == 0 {
		return []simcore.UtilPoint{}
	}
	startH := math.Floor(points[0].StartS / 3600)
	endH := math.Ceil(points[len(points)-1].EndS / 3600)
	width := 1.0 // hours per point
	if span := endH - startH; span > maxSharePoints {
		width = math.Ceil(span / maxSharePoints)
	}
	out := make([]simcore.UtilPoint, 0, int(math.Ceil((endH-startH)/width)))
	k := 0
	for h := startH; h < endH; h += width {
		from, to := h*3600, (h+width)*3600
		for k < len(points) && points[k].EndS <= from {
			k++
		}
		// average over the points overlapping this hour, from k on
		j := k
		var seg []simcore.UtilPoint
		for j < len(points) && points[j].StartS < to {
			seg = append(seg, points[j])
			j++
		}
		p := average(seg, from, to)
		out = append(out, p)
	}
	return out
}
