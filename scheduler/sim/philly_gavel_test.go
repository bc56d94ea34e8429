package sim

import (
	"math"
	"testing"
)

// TestPhillySource_GavelDurations checks Synergy's default ("exponential")
// Philly mode: GPU counts still come from the list (entry i mod len), while
// durations are re-drawn Gavel-like: all within 60·10^1.5 to 60·10^4 s,
// about 20% of them above 60·10^3 s (16.7 h).
func TestPhillySource_GavelDurations(t *testing.T) {
	jobs, _, err := LoadPhilly("testdata/philly_cluster_job_log.json", PhillyOptions{MultiGPU: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	src, err := NewPhillySource(jobs, PhillyConfig{JobsPerHour: 9, NumJobs: n, Split: [3]float64{20, 70, 10}, Seed: 5, GavelDurations: true})
	if err != nil {
		t.Fatal(err)
	}
	long, fromLog := 0, 0
	for i, j := range drain(t, src, n) {
		if j.GPUs != jobs[i%len(jobs)].GPUs {
			t.Fatalf("job %d: %d GPUs, list entry %d has %d", i, j.GPUs, i%len(jobs), jobs[i%len(jobs)].GPUs)
		}
		// iterations = floor(duration / t), so duration lies in
		// [n·t, (n+1)·t).
		lo, hi := float64(j.Iterations)*j.IterSeconds, float64(j.Iterations+1)*j.IterSeconds
		if hi <= 60*math.Pow(10, 1.5) || lo >= 60*math.Pow(10, 4) {
			t.Fatalf("job %d: duration in [%v, %v) s, outside the Gavel-like range", i, lo, hi)
		}
		if lo >= 60e3 {
			long++
		}
		if j.Iterations == int64(jobs[i%len(jobs)].DurationS/j.IterSeconds) {
			fromLog++
		}
	}
	// Binomial(4000, 0.2): sd 25 jobs, so ±100 is four sd.
	if long < 700 || long > 900 {
		t.Errorf("%d of %d durations above 16.7 h, want about 800", long, n)
	}
	if fromLog > n/100 {
		t.Errorf("%d of %d jobs kept the log's duration", fromLog, n)
	}
	if d := src.Describe(); d != "philly: 3 jobs, 9 jobs/h, Gavel-like durations, split 20/70/10, seed 5" {
		t.Errorf("Describe() = %q", d)
	}
}
