package joint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/synergy-sched/synergy/models/zoo"
)

// Policies compared, by name.
const (
	Gavel   = "gavel"   // max_min_fairness_perf on CPU-blind GPU speeds, GPU-proportional CPU/memory
	Synergy = "synergy" // type-agnostic equal time shares, TUNE placement inside each type
	Joint   = "joint"   // max_min_fairness_perf on JointThroughput, TUNE placement inside each type
)

// PolicyNames lists the policies Simulate accepts.
func PolicyNames() []string { return []string{Gavel, Synergy, Joint} }

// RoundSeconds is the round length (Gavel's 6 minutes).
const RoundSeconds = 360.0

// Job is one single-GPU job of the workload. Steps are counted in seconds of a V100 at
// Synergy's fair share (where every zoo model's sensitivity is 1).
type Job struct {
	ID      int
	Model   zoo.Model
	Arrival float64
	Steps   float64
}

// Generate draws n jobs: Poisson arrivals at jobsPerHour, the model uniform over the zoo's ten,
// a duration of 10^U(1.5, 3) minutes (30 min to 16.7 h) of V100 fair-share time.
func Generate(seed uint64, n int, jobsPerHour float64) ([]Job, error) {
	if n <= 0 || jobsPerHour <= 0 {
		return nil, fmt.Errorf("joint: need n > 0 and jobsPerHour > 0, got %d and %g", n, jobsPerHour)
	}
	r := rand.New(rand.NewPCG(seed, 0x6a6f696e74))
	models := zoo.All()
	jobs := make([]Job, n)
	t := 0.0
	for i := range jobs {
		t += r.ExpFloat64() * 3600 / jobsPerHour
		minutes := math.Pow(10, 1.5+1.5*r.Float64())
		jobs[i] = Job{ID: i, Model: models[r.IntN(len(models))], Arrival: t, Steps: minutes * 60}
	}
	return jobs, nil
}

// Result is one simulation's outcome.
type Result struct {
	Policy  string
	Finish  []float64 // per job ID
	MeanJCT float64   // seconds, over all jobs
	Rounds  int
}

type active struct {
	job  *Job
	left float64
}

// Simulate runs the round-based fluid simulation of policy on cluster for jobs.
func Simulate(policy string, cluster []GPUType, jobs []Job) (Result, error) {
	if err := checkInputs(policy, cluster, jobs); err != nil {
		return Result{}, err
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].Arrival < jobs[order[b]].Arrival })
	res := Result{Policy: policy, Finish: make([]float64, len(jobs))}
	var run []active
	next, done, now := 0, 0, 0.0
	for done < len(jobs) {
		for next < len(order) && jobs[order[next]].Arrival <= now {
			run = append(run, active{job: &jobs[order[next]], left: jobs[order[next]].Steps})
			next++
		}
		if len(run) == 0 {
			now = math.Ceil(jobs[order[next]].Arrival/RoundSeconds) * RoundSeconds
			continue
		}
		r, err := rates(policy, cluster, run)
		if err != nil {
			return Result{}, err
		}
		run, done = advance(run, r, now, res.Finish, done)
		now += RoundSeconds
		res.Rounds++
	}
	sum := 0.0
	for i, j := range jobs {
		sum += res.Finish[i] - j.Arrival
	}
	res.MeanJCT = sum / float64(len(jobs))
	return res, nil
}

// advance runs one round at constant rates, recording jobs that finish within it.
func advance(run []active, rates []float64, now float64, finish []float64, done int) ([]active, int) {
	kept := run[:0]
	for i, a := range run {
		if rates[i] > 0 && a.left <= rates[i]*RoundSeconds {
			finish[a.job.ID] = now + a.left/rates[i]
			done++
			continue
		}
		a.left -= rates[i] * RoundSeconds
		kept = append(kept, a)
	}
	return kept, done
}

func checkInputs(policy string, cluster []GPUType, jobs []Job) error {
	known := false
	for _, p := range PolicyNames() {
		known = known || p == policy
	}
	if !known {
		return fmt.Errorf("joint: unknown policy %q (known: %v)", policy, PolicyNames())
	}
	if len(cluster) == 0 {
		return fmt.Errorf("joint: empty cluster")
	}
	for i, j := range jobs {
		if j.ID != i || j.Steps <= 0 || j.Arrival < 0 {
			return fmt.Errorf("joint: job %d: want id %d, steps > 0 and arrival >= 0", j.ID, i)
		}
	}
	return nil
}
