package joint

import (
	"math"
	"reflect"
	"testing"

	"github.com/synergy-sched/synergy/models/zoo"
)

// handModel is a hand-made matrix: throughput rises with CPUs (rows) up to 4 CPUs and needs
// at least 62.5 GB; ideal 4 CPUs and 62.5 GB.
func handModel() zoo.Model {
	var t [9][5]float64
	byCPU := [9]float64{0.25, 0.5, 1, 2, 2, 2, 2, 2, 2}
	for i, v := range byCPU {
		t[i] = [5]float64{0.1, v, v, v, v}
	}
	return zoo.Model{Name: "hand", Class: zoo.ClassImage, IdealCPUsPerGPU: 4, IdealMemBytesPerGPU: 62.5e9, Table: t}
}

func TestJointThroughputMapping(t *testing.T) {
	m := handModel()
	cases := []struct {
		cpus, mem, speed, want float64
	}{
		{3, 62.5, 1, 1},        // S(3, 62.5) = 1 of ideal 2: half of ideal rate 2
		{12, 187.5, 0.25, 0.5}, // more than ideal: capped at ideal (2) × speed
		{2, 62.5, 0.5, 0.25},   // S = 0.5
		{4, 20.83, 1, 0.1},     // memory-starved
		{2.5, 100, 1, 0.5},     // between grid points: the lower point (2 CPUs, 62.5 GB)
	}
	for _, c := range cases {
		typ := GPUType{Name: "x", GPUs: 1, CPUsPerGPU: c.cpus, MemGBPerGPU: c.mem,
			SpeedByClass: map[string]float64{zoo.ClassImage: c.speed}}
		got, err := JointThroughput(typ, m)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("cpus %g mem %g speed %g: T = %g, want %g", c.cpus, c.mem, c.speed, got, c.want)
		}
	}
	if _, err := JointThroughput(GPUType{Name: "y", SpeedByClass: map[string]float64{}}, m); err == nil {
		t.Error("a type without a speed for the class must be an error")
	}
}

func TestPlaceWithinCapacity(t *testing.T) {
	jobs, err := Generate(7, 150, 40)
	if err != nil {
		t.Fatal(err)
	}
	models := make([]zoo.Model, len(jobs))
	for i, j := range jobs {
		models[i] = j.Model
	}
	cl := MixedCluster()
	for _, p := range PolicyNames() {
		x, err := Allocate(p, cl, models)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if s := x[i][0] + x[i][1] + x[i][2]; s > 1+1e-6 {
				t.Errorf("%s: job %d row sums to %g > 1", p, i, s)
			}
		}
		for j, typ := range cl {
			col := make([]float64, len(models))
			for i := range x {
				col[i] = x[i][j]
			}
			checkCapacity(t, p, typ, Place(typ, col, models, p == Gavel))
		}
	}
}

func checkCapacity(t *testing.T, p string, typ GPUType, g []Grant) {
	t.Helper()
	gpus, cpus, mem := 0.0, 0.0, 0.0
	for _, x := range g {
		gpus += x.GPU
		cpus += x.GPU * x.CPUsPerGPU
		mem += x.GPU * x.MemGBPerGPU
	}
	n := float64(typ.GPUs)
	if gpus > n*(1+1e-6) || cpus > n*typ.CPUsPerGPU*(1+1e-6) || mem > n*typ.MemGBPerGPU*(1+1e-6) {
		t.Errorf("%s on %s: GPUs %g CPUs %g GB %g over capacity (%g, %g, %g)",
			p, typ.Name, gpus, cpus, mem, n, n*typ.CPUsPerGPU, n*typ.MemGBPerGPU)
	}
	if gpus < n*0.99 {
		t.Logf("%s on %s: %g of %g GPUs used", p, typ.Name, gpus, n)
	}
}

func TestTUNEGivesIdealWhereRoomIsLeft(t *testing.T) {
	alex, _ := zoo.Lookup("alexnet")
	gnmt, _ := zoo.Lookup("gnmt")
	typ := MixedCluster()[0] // v100: 3 CPUs, 62.5 GB per GPU
	typ.GPUs = 2
	// gnmt leaves 2 CPUs, not the 9 alexnet needs: alexnet stays at 3 CPUs.
	g := Place(typ, []float64{1, 1}, []zoo.Model{alex, gnmt}, false)
	if g[0].CPUsPerGPU != 3 || g[1].CPUsPerGPU != 1 {
		t.Errorf("grants %+v, want alexnet 3 CPUs and gnmt 1", g)
	}
	typ.CPUsPerGPU, typ.MemGBPerGPU = 6.5, 72.5 // 13 CPUs, 145 GB: gnmt 1 + alexnet 12, 20 + 125 GB
	g = Place(typ, []float64{1, 1}, []zoo.Model{alex, gnmt}, false)
	if g[0].CPUsPerGPU != 12 {
		t.Errorf("grants %+v, want alexnet at its ideal 12 CPUs", g)
	}
	if p := Place(typ, []float64{1, 1}, []zoo.Model{alex, gnmt}, true); p[0].CPUsPerGPU != 6.5 || p[1].CPUsPerGPU != 6.5 {
		t.Errorf("proportional grants %+v, want 6.5 CPUs each", p)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := Generate(3, 60, 12)
	b, _ := Generate(3, 60, 12)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Generate differs for one seed")
	}
	for _, p := range PolicyNames() {
		r1, err := Simulate(p, MixedCluster(), a)
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := Simulate(p, MixedCluster(), b)
		if !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: two runs on one seed differ", p)
		}
		for i, f := range r1.Finish {
			m := a[i].Model
			fastest := a[i].Steps / Sensitivity(m, m.IdealCPUsPerGPU, idealGB(m)) // V100 at its ideal
			if f < a[i].Arrival+fastest-1e-6 {
				t.Errorf("%s: job %d finished at %g, before arrival + its fastest time %g", p, i, f, a[i].Arrival+fastest)
			}
		}
	}
	c, _ := Generate(4, 60, 12)
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 3 and 4 gave one workload")
	}
}

// TestJointBeatsBoth is the comparison's direction on a small fixed workload.
func TestJointBeatsBoth(t *testing.T) {
	jobs, err := Generate(0, 80, 16)
	if err != nil {
		t.Fatal(err)
	}
	jct := map[string]float64{}
	for _, p := range PolicyNames() {
		r, err := Simulate(p, MixedCluster(), jobs)
		if err != nil {
			t.Fatal(err)
		}
		jct[p] = r.MeanJCT
	}
	if jct[Joint] >= jct[Gavel] || jct[Joint] >= jct[Synergy] {
		t.Errorf("mean JCT (s): %v, want joint below both", jct)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Simulate("nope", MixedCluster(), nil); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := Generate(0, 0, 1); err == nil {
		t.Error("n = 0 accepted")
	}
	if _, err := Simulate(Joint, MixedCluster(), []Job{{ID: 5, Steps: 1}}); err == nil {
		t.Error("misnumbered job accepted")
	}
}
