package sensitivity

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Allocation is the smallest grid point reaching a fraction of the best.
type Allocation struct {
	CPUs         float64 // cores, for the whole job
	MemBytes     int64   // bytes for the whole job ("unlimited": what the job used there, else the host's DRAM)
	MemUnlimited bool    // the smallest was the unlimited column
	// MemHow says what an unlimited MemBytes is ("" for the host's DRAM).
	MemHow          string
	GPUs            int
	SamplesPerS     float64
	BestSamplesPerS float64
}

// SmallestAllocation returns the cheapest cell of p's grid (fewest CPUs,
// then least memory) reaching frac of the best throughput, the grid read
// as the demand rule reads it (demandGrid: the unlimited column at what the
// job used there, a cell measured beside other work not deciding alone).
func SmallestAllocation(p *Profile, frac float64) (Allocation, error) {
	dg, err := p.demandGrid()
	if err != nil {
		return Allocation{}, err
	}
	m := dg.m
	best, _, _ := m.Max()
	if !(best > 0) {
		return Allocation{}, errors.New("profile: every cell is 0 samples/s: no allocation reaches a share of the best")
	}
	i, j := dg.smallest(m.Values, 1, frac)
	c, b, v := m.CPUs[i], m.MemBytes[j], m.Values[i][j]
	a := Allocation{CPUs: c, MemBytes: int64(b), GPUs: max(p.Job.GPUs, 1), SamplesPerS: v, BestSamplesPerS: best}
	a.MemUnlimited = b == m.MemBytes[len(m.MemBytes)-1] && dg.unlimited
	if a.MemUnlimited {
		a.MemHow = dg.memHow
	}
	return a, nil
}

const mebi = 1 << 20

// slurmMem formats bytes for Slurm, rounded up: whole GiB as "NG", else "NM".
func slurmMem(b int64) string {
	mi := (b + mebi - 1) / mebi
	if mi%1024 == 0 {
		return fmt.Sprintf("%dG", mi/1024)
	}
	return fmt.Sprintf("%dM", mi)
}

// ExportSlurm returns the sbatch/srun flags for the smallest allocation
// reaching IdealFraction of the best: "--cpus-per-gpu=N --mem-per-gpu=X",
// CPUs rounded up to whole cores, memory up to whole MiB (G when whole
// GiB). An unlimited memory column stands at what the job used there
// (Profile.UnlimitedMemBytes), or at the host's DRAM where the profile does
// not record it.
func ExportSlurm(p *Profile) (string, Allocation, error) {
	a, err := SmallestAllocation(p, IdealFraction)
	if err != nil {
		return "", a, err
	}
	cpg := int(math.Ceil(a.CPUs/float64(a.GPUs) - 1e-9))
	mpg := (a.MemBytes + int64(a.GPUs) - 1) / int64(a.GPUs)
	return fmt.Sprintf("--cpus-per-gpu=%d --mem-per-gpu=%s", cpg, slurmMem(mpg)), a, nil
}

// ExportK8s returns a Kubernetes resources block (YAML, written by hand)
// for the smallest allocation reaching IdealFraction of the best: CPU in
// millicores and memory in MiB (rounded up), requests equal to limits (the
// profile was measured under hard limits), and the job's GPUs as
// nvidia.com/gpu.
func ExportK8s(p *Profile) (string, Allocation, error) {
	a, err := SmallestAllocation(p, IdealFraction)
	if err != nil {
		return "", a, err
	}
	milli := int64(math.Ceil(a.CPUs*1000 - 1e-6))
	mi := (a.MemBytes + mebi - 1) / mebi
	var b strings.Builder
	fmt.Fprintf(&b, "# synergy: %s: smallest allocation reaching %g%% of the best throughput\n", yamlComment(p.Job.Name), IdealFraction*100)
	fmt.Fprintf(&b, "# (%.1f of %.1f samples/s", a.SamplesPerS, a.BestSamplesPerS)
	if a.MemUnlimited && a.MemHow != "" {
		b.WriteString("; memory unlimited when profiled: " + yamlComment(a.MemHow))
	} else if a.MemUnlimited {
		b.WriteString("; memory unlimited when profiled: the host's DRAM")
	}
	b.WriteString(")\n")
	b.WriteString("resources:\n")
	for _, sect := range []string{"requests", "limits"} {
		fmt.Fprintf(&b, "  %s:\n", sect)
		fmt.Fprintf(&b, "    cpu: \"%dm\"\n", milli)
		fmt.Fprintf(&b, "    memory: \"%dMi\"\n", mi)
		fmt.Fprintf(&b, "    nvidia.com/gpu: \"%d\"\n", a.GPUs)
	}
	return b.String(), a, nil
}

func yamlComment(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
