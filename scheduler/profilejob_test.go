package scheduler

import (
	"math"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// cpuBoundProfile is a one-GPU job whose throughput grows 100 samples/s per
// CPU up to 4 CPUs and ignores memory.
func cpuBoundProfile() *sensitivity.Profile {
	p := &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion,
		Job:           sensitivity.JobInfo{Name: "cnn", Batch: 32, GPUs: 1, MaxIterations: 5000},
		Host:          sensitivity.HostInfo{DRAMBytes: 64e9},
		Axes:          sensitivity.Axes{CPUs: []float64{1, 2, 4, 8}, MemLimitBytes: []int64{8e9, 16e9, 0}},
	}
	for _, c := range p.Axes.CPUs {
		for _, b := range p.Axes.MemLimitBytes {
			p.Cells = append(p.Cells, sensitivity.Cell{CPUs: c, MemLimitBytes: b, Measured: true, SamplesPerS: 100 * math.Min(c, 4)})
		}
	}
	return p
}

func TestJobFromProfile_NormalisesAtFairShare(t *testing.T) {
	// One server, 4 GPUs, 8 CPUs, 64 GB: fair share 2 CPUs, 16 GB per GPU.
	c := Homogeneous("lab", 1, 4, 8, 64e9)
	j, err := JobFromProfile(7, cpuBoundProfile(), ShapeOf(&c))
	if err != nil {
		t.Fatal(err)
	}
	// At fair share 200 samples/s → 1.0; 4 CPUs → 400/200 = 2.0, the best;
	// ideal = the fewest CPUs and least memory reaching 95% of 2.0.
	if j.IdealCPUsPerGPU != 4 || j.IdealMemBytesPerGPU != 8e9 || j.Speedup != 2 {
		t.Errorf("ideal %v CPUs %v B speed-up %v", j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup)
	}
	// iteration time at fair share: 32 samples / 200 samples/s = 0.16 s
	if j.IterSeconds != 0.16 || j.Iterations != 5000 || j.ID != 7 || j.GPUs != 1 {
		t.Errorf("job %+v", j)
	}
	if v, _ := j.Matrix.At(1, 16e9); v != 0.5 {
		t.Errorf("value at 1 CPU = %v, want 0.5", v)
	}
	if len(j.Warnings) != 0 {
		t.Errorf("warnings %v", j.Warnings)
	}
	if err := j.Validate(); err != nil {
		t.Error(err)
	}
}

func TestJobFromProfile_ClampsOutsideRangeWithWarning(t *testing.T) {
	// 16 CPUs and 32 GB per GPU: beyond the profiled 8 CPUs.
	c := Homogeneous("fat", 1, 2, 32, 64e9)
	j, err := JobFromProfile(1, cpuBoundProfile(), ShapeOf(&c))
	if err != nil {
		t.Fatal(err)
	}
	// 16 CPUs lies beyond 1–8; 32 GB lies inside the memory range.
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "profiled with 1–8 CPUs per GPU, but this cluster's GPU-proportional share is 16 CPUs per GPU") {
		t.Fatalf("warnings %v", j.Warnings)
	}
	// Normalised at the clamped edge (8 CPUs, 32 GB) = 400: the best is
	// 1.0, first reached at 4 CPUs and 8 GB, less than the fair share.
	if j.Speedup != 1 || j.IdealCPUsPerGPU != 4 || j.IdealMemBytesPerGPU != 8e9 {
		t.Errorf("speed-up %v ideal CPUs %v", j.Speedup, j.IdealCPUsPerGPU)
	}
}

func TestJobFromProfile_Errors(t *testing.T) {
	c := Homogeneous("lab", 1, 4, 8, 64e9)
	p := cpuBoundProfile()
	p.Job.Batch = 0
	if _, err := JobFromProfile(1, p, ShapeOf(&c)); err == nil || !strings.Contains(err.Error(), "job.batch") {
		t.Errorf("batch 0: %v", err)
	}
	p = cpuBoundProfile()
	p.Cells = p.Cells[:3]
	if _, err := JobFromProfile(1, p, ShapeOf(&c)); err == nil || !strings.Contains(err.Error(), "no cell") {
		t.Errorf("missing cell: %v", err)
	}
}

// TestJobFromProfile_MeasuredInsensitiveJobGivesBackItsShare: the demo's
// audio job, its cells within noise of each other (±1.7-1.9 %), on the
// default cluster (3 CPUs, 62.5 GB per GPU): its demand is the smallest
// cell, with the memory it used, and says why; the share's memory lies
// above its unlimited column, which is no clamping.
func TestJobFromProfile_MeasuredInsensitiveJobGivesBackItsShare(t *testing.T) {
	const mib = 1 << 20
	p := &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion,
		Job:           sensitivity.JobInfo{Name: "audio", Batch: 16, GPUs: 1, MaxIterations: 100, FootprintBytes: 40 * mib},
		Host:          sensitivity.HostInfo{DRAMBytes: 25_280_000_000, DatasetBytes: 256 * mib},
		Axes:          sensitivity.Axes{CPUs: []float64{0.5, 1, 2}, MemLimitBytes: []int64{64 * mib, 0}},
	}
	for i, v := range [][2]float64{{387.8, 6.4}, {386.8, 7.2}, {388.1, 7.0}} {
		c := p.Axes.CPUs[i]
		p.Cells = append(p.Cells,
			sensitivity.Cell{CPUs: c, MemLimitBytes: 64 * mib, Measured: true, SamplesPerS: 27.5, SamplesPerSCI95: 0.8},
			sensitivity.Cell{CPUs: c, MemLimitBytes: 0, Measured: true, SamplesPerS: v[0], SamplesPerSCI95: v[1]})
	}
	c, err := Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	j, err := JobFromProfile(0, p, ShapeOf(&c))
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 CPUs and 40 MiB + 256 MiB, not 3 CPUs and 62.5 GB (the share) nor
	// 25.28 GB (the host); 387.8 against the share's 388.1 is noise.
	if j.IdealCPUsPerGPU != 0.5 || j.IdealMemBytesPerGPU != 296*mib || j.Speedup != 1 {
		t.Fatalf("ideal %v CPUs %v B speed-up %v: %s", j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup, j.IdealWhy)
	}
	if !strings.HasPrefix(j.IdealWhy, "0.5 CPUs, 0.3104 GB: within noise of the share's 388 samples/s") {
		t.Errorf("why: %s", j.IdealWhy)
	}
	d := IdealDemand(j, ShapeOf(&c))
	if d.Ideal.CPUs != 0.5 || d.Ideal.MemBytes != 296*mib {
		t.Errorf("demand %+v", d)
	}
	// Only the CPU range warns: 62.5 GB is above an unlimited column that
	// stands at what the job used.
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "CPUs per GPU") {
		t.Errorf("warnings %q", j.Warnings)
	}
}
