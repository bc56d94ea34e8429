package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Summary is a distribution in hours.
type Summary struct {
	N           int     `json:"n"`
	MeanHours   float64 `json:"mean_hours"`
	MedianHours float64 `json:"median_hours"`
	P95Hours    float64 `json:"p95_hours"`
	P99Hours    float64 `json:"p99_hours"`
	P999Hours   float64 `json:"p999_hours"`
	MaxHours    float64 `json:"max_hours"`
}

// UtilPoint is the share of the cluster allocated over [StartS, EndS).
type UtilPoint struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	GPUPct float64 `json:"gpu_pct"`
	CPUPct float64 `json:"cpu_pct"`
	MemPct float64 `json:"mem_pct"`
}

// JobRecord is one finished job of the window.
type JobRecord struct {
	ID       int     `json:"id"`
	Model    string  `json:"model"`
	GPUs     int     `json:"gpus"`
	ArrivalS float64 `json:"arrival_s"`
	StartS   float64 `json:"start_s"`
	FinishS  float64 `json:"finish_s"`
}

// Result is one simulation's outcome.
type Result struct {
	Cluster      string         `json:"cluster"`
	GPUs         int            `json:"gpus"`
	Strategy     string         `json:"strategy"`
	Policy       string         `json:"policy"`
	Workload     string         `json:"workload"`
	RoundSeconds float64        `json:"round_s"`
	Window       simcore.Window `json:"window"`
	Rounds       int            `json:"rounds"`
	EndSeconds   float64        `json:"end_s"`
	// JCT and QueueingDelay are over the window's finished jobs.
	JCT           Summary `json:"jct"`
	QueueingDelay Summary `json:"queueing_delay"`
	// MakespanHours is from the window's first arrival to its last finish.
	MakespanHours float64 `json:"makespan_hours"`
	// Utilization is the mean allocated share over the window's span.
	Utilization UtilPoint `json:"utilization"`
	// AllJobs is the JCT over every finished job, window or not.
	AllJobs Summary `json:"all_jobs_jct"`
	// UtilizationHourly is allocated shares averaged per hour of
	// simulated time.
	UtilizationHourly []UtilPoint `json:"utilization_hourly"`
	// Jobs lists the window's finished jobs by id.
	Jobs []JobRecord `json:"jobs"`
}

// WriteJSON writes the result, indented, with a trailing newline.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// Quantile is the q-quantile of sorted xs with linear interpolation between
// closest ranks (numpy's and pandas' default, which the original's figures
// use).
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if hi >= n {
		hi = n - 1
	}
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// Summarise describes xs (seconds) in hours.
func Summarise(xsSeconds []float64) Summary {
	if len(xsSeconds) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xsSeconds...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	h := func(x float64) float64 { return x / 3600 }
	return Summary{
		N:           len(s),
		MeanHours:   h(sum / float64(len(s))),
		MedianHours: h(Quantile(s, 0.5)),
		P95Hours:    h(Quantile(s, 0.95)),
		P99Hours:    h(Quantile(s, 0.99)),
		P999Hours:   h(Quantile(s, 0.999)),
		MaxHours:    h(s[len(s)-1]),
	}
}

func summarise(cfg Config, src Source, fin []done, rounds int, end float64, u *utilAcc) *Result {
	sortDone(fin)
	res := &Result{
		Cluster: cfg.Cluster.Name, GPUs: cfg.Cluster.Totals().GPUs,
		Strategy: cfg.Strategy.Name(), Policy: cfg.Policy.Name(), Workload: src.Describe(),
		RoundSeconds: cfg.RoundSeconds, Window: cfg.Window, Rounds: rounds, EndSeconds: end,
		Jobs: []JobRecord{},
	}
	var jct, wait, all []float64
	first, last := math.Inf(1), math.Inf(-1)
	for _, d := range fin {
		all = append(all, d.finish-d.arrival)
		if !cfg.Window.Has(d.id) {
			continue
		}
		jct = append(jct, d.finish-d.arrival)
		wait = append(wait, d.start-d.arrival)
		first = math.Min(first, d.arrival)
		last = math.Max(last, d.finish)
		res.Jobs = append(res.Jobs, JobRecord{ID: d.id, Model: d.model, GPUs: d.gpus, ArrivalS: d.arrival, StartS: d.start, FinishS: d.finish})
	}
	res.JCT = Summarise(jct)
	res.QueueingDelay = Summarise(wait)
	res.AllJobs = Summarise(all)
	if len(jct) > 0 {
		res.MakespanHours = (last - first) / 3600
		res.Utilization = average(u.points, first, last)
	}
	res.UtilizationHourly = hourly(u.points)
	return res
}

// average is the time-weighted mean of points over [from, to).
func average(points []UtilPoint, from, to float64) UtilPoint {
	out := UtilPoint{StartS: from, EndS: to}
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

// hourly averages points per hour of simulated time.
func hourly(points []UtilPoint) []UtilPoint {
	if len(points) == 0 {
		return []UtilPoint{}
	}
	startH := math.Floor(points[0].StartS / 3600)
	endH := math.Ceil(points[len(points)-1].EndS / 3600)
	out := make([]UtilPoint, 0, int(endH-startH))
	k := 0
	for h := startH; h < endH; h++ {
		from, to := h*3600, (h+1)*3600
		for k < len(points) && points[k].EndS <= from {
			k++
		}
		// average over the points overlapping this hour, from k on
		j := k
		var seg []UtilPoint
		for j < len(points) && points[j].StartS < to {
			seg = append(seg, points[j])
			j++
		}
		p := average(seg, from, to)
		out = append(out, p)
	}
	return out
}
