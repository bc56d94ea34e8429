// Package joint is the policy issue 14 item 6 asks for, which neither Gavel nor Synergy has: a
// Gavel-style max-min-fairness LP over GPU types whose throughput for job m on type j is read
// from the job's Synergy sensitivity matrix at the CPU and memory a GPU of type j's servers can
// give, with placement inside each type by a fluid Synergy-TUNE (jobs get CPU and memory by
// their matrices rather than GPU-proportional shares).
//
// It is a fluid simulation: each round the LP's time fractions X are applied exactly (Gavel's
// `ideal` mode) and each type's CPU and memory are one pool (no server fragmentation). The
// comparison against Gavel alone and Synergy alone uses the same simulator, so the three differ
// only in how they allocate. See docs/joint.md.
package joint

import (
	"fmt"

	"github.com/synergy-sched/synergy/models/zoo"
)

// GPUType is one GPU type of a mixed cluster: its GPUs and the CPU cores and memory (GB) its
// servers carry per GPU.
type GPUType struct {
	Name         string
	GPUs         int
	CPUsPerGPU   float64
	MemGBPerGPU  float64
	SpeedByClass map[string]float64 // GPU speed-up vs V100 per zoo class (1 = V100)
}

// MixedCluster is the comparison's cluster: 32 GPUs of each of V100, P100 and K80. Newer types
// sit in CPU- and memory-poor servers (V100 3 CPUs and 62.5 GB per GPU, as Synergy's default
// server; P100 6 and 125; K80 12 and 187.5). The speed-ups per class are illustrative, in the
// range of Gavel's measured throughputs (K80 3–12× slower than V100, P100 about 2×).
func MixedCluster() []GPUType {
	return []GPUType{
		{Name: "v100", GPUs: 32, CPUsPerGPU: 3, MemGBPerGPU: 62.5,
			SpeedByClass: map[string]float64{zoo.ClassImage: 1, zoo.ClassLanguage: 1, zoo.ClassSpeech: 1}},
		{Name: "p100", GPUs: 32, CPUsPerGPU: 6, MemGBPerGPU: 125,
			SpeedByClass: map[string]float64{zoo.ClassImage: 0.55, zoo.ClassLanguage: 0.45, zoo.ClassSpeech: 0.6}},
		{Name: "k80", GPUs: 32, CPUsPerGPU: 12, MemGBPerGPU: 187.5,
			SpeedByClass: map[string]float64{zoo.ClassImage: 0.25, zoo.ClassLanguage: 0.15, zoo.ClassSpeech: 0.3}},
	}
}

// Sensitivity reads model's normalised throughput (1 = Synergy's fair share of 3 CPUs and
// 62.5 GB per GPU) at cpus and memGB per GPU: the value at the largest grid point that does not
// exceed the request in each axis (a request below the grid reads the first row/column).
func Sensitivity(m zoo.Model, cpus, memGB float64) float64 {
	return m.Table[gridIndex(zoo.CPUsPerGPU(), cpus)][gridIndex(zoo.MemGBPerGPU(), memGB)]
}

func gridIndex(axis []float64, v float64) int {
	i := 0
	for k, a := range axis {
		if a <= v+1e-9 {
			i = k
		}
	}
	return i
}

// GPUSpeed is the type's speed-up for model m's class (1 = V100).
func GPUSpeed(t GPUType, m zoo.Model) (float64, error) {
	s, ok := t.SpeedByClass[m.Class]
	if !ok || s <= 0 {
		return 0, fmt.Errorf("joint: type %s has no speed for class %q", t.Name, m.Class)
	}
	return s, nil
}

// JointThroughput is T[m][j] of the joint policy, in fair-share-V100 steps per second per GPU:
//
//	T[m][j] = speed_j(m) · S_m(ideal) · min(1, S_m(c_j, g_j) / S_m(ideal))
//
// where S_m is the job's sensitivity matrix, (c_j, g_j) the CPUs and GB per GPU of type j's
// servers and S_m(ideal) its value at the job's ideal per-GPU CPU and memory. It is the rate
// the job reaches on type j with the type's GPU-proportional CPU and memory, capped at its ideal.
func JointThroughput(t GPUType, m zoo.Model) (float64, error) {
	sp, err := GPUSpeed(t, m)
	if err != nil {
		return 0, err
	}
	ideal := Sensitivity(m, m.IdealCPUsPerGPU, float64(m.IdealMemBytesPerGPU)/zoo.GB)
	if ideal <= 0 {
		return 0, fmt.Errorf("joint: model %s has zero throughput at its ideal allocation", m.Name)
	}
	r := Sensitivity(m, t.CPUsPerGPU, t.MemGBPerGPU) / ideal
	if r > 1 {
		r = 1
	}
	return sp * ideal * r, nil
}
