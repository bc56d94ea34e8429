package joint

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
	"github.com/synergy-sched/synergy/scheduler/simcore"
	"github.com/synergy-sched/synergy/sensitivity"
)

const gb = 1e9

// handJob has a hand-made matrix: throughput rises with CPUs up to 6 per
// GPU and needs 62.5 GB; ideal 6 CPUs and 62.5 GB (S = 2 there).
func handJob(id int, idealCPUs float64) *scheduler.Job {
	cpus := []float64{1, 3, 6, 12}
	mem := []float64{20 * gb, 62.5 * gb, 125 * gb}
	byCPU := map[float64][]float64{1: {0.1, 0.5, 0.5}, 3: {0.1, 1, 1}, 6: {0.1, 2, 2}, 12: {0.1, 2, 2}}
	if idealCPUs == 1 { // a light job: flat in CPUs
		byCPU = map[float64][]float64{1: {0.1, 1, 1}, 3: {0.1, 1, 1}, 6: {0.1, 1, 1}, 12: {0.1, 1, 1}}
	}
	m := sensitivity.Matrix{CPUs: cpus, MemBytes: mem, Unit: sensitivity.UnitNormalized, PerGPU: true}
	for _, c := range cpus {
		m.Values = append(m.Values, byCPU[c])
	}
	return &scheduler.Job{ID: id, Model: "hand", GPUs: 1, Iterations: 1, IterSeconds: 1, Speedup: 2,
		IdealCPUsPerGPU: idealCPUs, IdealMemBytesPerGPU: 62.5 * gb, Matrix: &m}
}

func TestFactor_RelativeToIdeal(t *testing.T) {
	j := handJob(0, 6)
	cases := []struct {
		name            string
		cpus, mem, want float64
	}{
		{"share of a CPU-poor server", 3, 62.5 * gb, 0.5}, // S(3) = 1 of S(6) = 2
		{"ideal", 6, 62.5 * gb, 1},
		{"more than ideal is capped", 12, 125 * gb, 1},
		{"between grid points", 4.5, 62.5 * gb, 0.75}, // (1 + 2)/2 = 1.5 of 2
		{"memory-starved", 6, 20 * gb, 0.05},          // 0.1 of 2
	}
	for _, c := range cases {
		if got := Factor(j, c.cpus, c.mem); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Factor(%g CPUs, %g GB) = %g, want %g", c.name, c.cpus, c.mem/gb, got, c.want)
		}
	}
	if Factor(nil, 1, 1) != 1 {
		t.Error("a job type without a sensitivity runs at the file's rate")
	}
	light := handJob(1, 1)
	if c, m := floor(light, Type{CPUsPerGPU: 3, MemBytesPerGPU: 62.5 * gb}); c != 1 || m != 62.5*gb {
		t.Errorf("floor of a light job on a 3-CPU share: %g CPUs %g GB, want 1 and 62.5", c, m/gb)
	}
}

// TestShaper_TuneRaisesWhereTheServerHolds: one 4-GPU V100 server of 12
// CPUs (3 per GPU). A hungry job (ideal 6) beside two light ones (ideal
// 1): floors 3 + 1 + 1 = 5 of 12, so the hungry job gets its ideal 6
// (5 + 3 = 8 ≤ 12) and runs at its ideal rate; proportional gives it 3
// (factor 0.5). Never more CPUs than the server has.
func TestShaper_TuneRaisesWhereTheServerHolds(t *testing.T) {
	c := Cluster{{Name: "v100", GPUsPerServer: 4, CPUsPerGPU: 3, MemBytesPerGPU: 62.5 * gb}}
	sens := Sensitivities{"hungry": handJob(0, 6), "light": handJob(1, 1)}
	round := []gavel.Placed{
		{ID: 2, Job: gavel.JobType{Model: "light (batch size 8)", ScaleFactor: 1}, Type: "v100", Servers: []gavel.ServerGPUs{{Server: 0, GPUs: 1}}},
		{ID: 0, Job: gavel.JobType{Model: "hungry", ScaleFactor: 1}, Type: "v100", Servers: []gavel.ServerGPUs{{Server: 0, GPUs: 1}}},
		{ID: 1, Job: gavel.JobType{Model: "light", ScaleFactor: 1}, Type: "v100", Servers: []gavel.ServerGPUs{{Server: 0, GPUs: 1}}},
	}
	for _, tc := range []struct {
		strategy   string
		hungryCPUs float64
		factors    []float64
	}{
		{Tune, 6, []float64{1, 1, 1}},
		{Fair, 3, []float64{1, 0.5, 1}},
	} {
		sh, err := newShaper(c, sens, tc.strategy)
		if err != nil {
			t.Fatal(err)
		}
		var grants []grant
		sh.grants = func(_ []gavel.Placed, g []grant) { grants = g }
		f, err := sh.Shape(round)
		if err != nil {
			t.Fatal(err)
		}
		used := 0.0
		for i, g := range grants {
			used += g.CPUsPerGPU
			if f[i] != tc.factors[i] {
				t.Errorf("%s: job %d factor %g, want %g", tc.strategy, round[i].ID, f[i], tc.factors[i])
			}
		}
		if grants[1].CPUsPerGPU != tc.hungryCPUs || used > 12 {
			t.Errorf("%s: hungry job %g CPUs, %g used of 12", tc.strategy, grants[1].CPUsPerGPU, used)
		}
	}
	if _, err := newShaper(c, sens, "drf"); err == nil {
		t.Error("drf does not run on a typed cluster")
	}
}

func TestSynergyFIFO_FirstTypeInSpecOrder(t *testing.T) {
	c := Cluster{{Name: "v100"}, {Name: "k80"}}
	s := &gavel.State{Types: []string{"k80", "v100"}, Workers: []int{4, 2}, Jobs: []gavel.StateJob{
		{ID: 0, ScaleFactor: 2, Throughput: []float64{1, 3}}, // v100 (first in the spec)
		{ID: 1, ScaleFactor: 2, Throughput: []float64{1, 3}}, // v100 full: k80
		{ID: 2, ScaleFactor: 4, Throughput: []float64{1, 3}}, // nowhere: waits
		{ID: 3, ScaleFactor: 1, Throughput: []float64{1, 3}}, // still offered: k80
	}}
	a, err := synergyFIFO{cluster: c}.Allocate(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]float64{0: {0, 1}, 1: {1, 0}, 2: {0, 0}, 3: {1, 0}}
	for id, row := range want {
		if a[id][0] != row[0] || a[id][1] != row[1] {
			t.Errorf("job %d: %v, want %v", id, a[id], row)
		}
	}
}

// cpuPoor is a mixed cluster whose fastest GPUs sit in the CPU-poorest
// servers: V100 3 CPUs per GPU, P100 6, K80 12 (4 GPUs per server).
func cpuPoor(t *testing.T) (gavel.ClusterSpec, Cluster) {
	t.Helper()
	c, err := scheduler.ParseCluster([]byte(`{"name": "cpu-poor", "groups": [
 {"count": 2, "gpus": 4, "cpus": 12, "mem_bytes": 250000000000, "gpu_type": "v100"},
 {"count": 4, "gpus": 4, "cpus": 24, "mem_bytes": 500000000000, "gpu_type": "p100"},
 {"count": 6, "gpus": 4, "cpus": 48, "mem_bytes": 750000000000, "gpu_type": "k80"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := gavel.SpecFromCluster(c)
	if err != nil {
		t.Fatal(err)
	}
	return spec, NewCluster(spec, gavel.ClusterShare(c))
}

// zooSensitivities gives the synthetic job types the zoo's matrices:
// CNNs the CPU-hungry image models, the rest language and speech ones.
func zooSensitivities(t *testing.T) Sensitivities {
	t.Helper()
	s := Sensitivities{}
	for jt, m := range map[string]string{"synth-cnn-s": "res18", "synth-cnn-l": "res50", "synth-seg": "mobilenet", "synth-gan": "shufflenet",
		"synth-rl": "alexnet", "synth-rnn": "lstm", "synth-transformer": "transformer", "synth-lm": "gnmt", "synth-asr": "deepspeech", "synth-rec": "m5"} {
		j, err := scheduler.ZooJob(0, m, 0, 1, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		s[jt] = j
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	return s
}

// runTyped runs one point of the synthetic continuous trace (100 jobs).
func runTyped(t *testing.T, spec gavel.ClusterSpec, c Cluster, sens Sensitivities, p simcore.Point) *simcore.Result {
	t.Helper()
	const dir = "../gavel/testdata/reference/synthetic/"
	tp, err := gavel.LoadThroughputs(dir + "throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	trace, err := gavel.LoadTrace(dir + "continuous.trace")
	if err != nil {
		t.Fatal(err)
	}
	s := gavel.Sweep{Config: gavel.Config{Cluster: spec, Check: true}, Throughputs: tp, Trace: trace, Seeds: []uint64{0}, Workers: 1,
		Plugins: Plugins(c, sens)}
	if p.Strategy != "" {
		s.Strategies, s.SynergyPolicy = []string{p.Strategy}, p.Policy
	} else {
		s.Policies = []string{p.Policy}
	}
	res, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("%+v: %v", p, err)
	}
	return res.Runs[0].Result
}

// TestRun_JointBeatsGavelOnACPUPoorCluster: with the zoo's sensitivities
// the joint policy's mean JCT is at least 5% below Gavel's
// max_min_fairness_perf (which sees the file's CPU-blind rates and gives
// every job its type's share) and below Synergy's FIFO+TUNE (blind to GPU
// types); every job finishes under all three.
func TestRun_JointBeatsGavelOnACPUPoorCluster(t *testing.T) {
	spec, c := cpuPoor(t)
	sens := zooSensitivities(t)
	j := runTyped(t, spec, c, sens, simcore.Point{Policy: Policy})
	g := runTyped(t, spec, c, sens, simcore.Point{Policy: "max_min_fairness_perf"})
	s := runTyped(t, spec, c, sens, simcore.Point{Policy: SynergyFIFO, Strategy: Tune})
	for name, r := range map[string]*simcore.Result{"joint": j, "gavel": g, "synergy": s} {
		if r.NumFinished != 100 {
			t.Errorf("%s: %d of 100 jobs finished", name, r.NumFinished)
		}
	}
	t.Logf("mean JCT h: joint %.3f, max_min_fairness_perf %.3f, synergy fifo+tune %.3f", j.MeanJCTS/3600, g.MeanJCTS/3600, s.MeanJCTS/3600)
	if !(j.MeanJCTS < 0.95*g.MeanJCTS) || !(j.MeanJCTS < s.MeanJCTS) {
		t.Errorf("joint %.3f h is not 5%% below max_min_fairness_perf %.3f h and below synergy %.3f h", j.MeanJCTS/3600, g.MeanJCTS/3600, s.MeanJCTS/3600)
	}
}

// TestRun_WithoutSensitivitiesJointIsGavel: no job type has a matrix, so
// the joint policy sees Gavel's rates and every job runs at them: job by
// job max_min_fairness_perf, which itself runs without a shaper.
func TestRun_WithoutSensitivitiesJointIsGavel(t *testing.T) {
	spec, c := cpuPoor(t)
	j := runTyped(t, spec, c, nil, simcore.Point{Policy: Policy})
	g := runTyped(t, spec, c, nil, simcore.Point{Policy: "max_min_fairness_perf"})
	j.Policy, g.Policy = "", ""
	a, _ := json.Marshal(j)
	b, _ := json.Marshal(g)
	if string(a) != string(b) {
		t.Errorf("joint without sensitivities differs from max_min_fairness_perf: mean JCT %.4f vs %.4f h", j.MeanJCTS/3600, g.MeanJCTS/3600)
	}
}

func TestRun_SameInputsSameBytes(t *testing.T) {
	spec, c := cpuPoor(t)
	sens := zooSensitivities(t)
	a, _ := json.Marshal(runTyped(t, spec, c, sens, simcore.Point{Policy: Policy}))
	b, _ := json.Marshal(runTyped(t, spec, c, sens, simcore.Point{Policy: Policy}))
	if string(a) != string(b) {
		t.Error("two runs of the same inputs differ")
	}
}

func TestPlugins_RefuseWhatDoesNotRun(t *testing.T) {
	_, c := cpuPoor(t)
	p := Plugins(c, nil)
	if _, _, err := p(simcore.Point{Policy: "srtf", Strategy: Tune}); err == nil {
		t.Error("Synergy's strategies run under its fifo only")
	}
	if pol, sh, err := p(simcore.Point{Policy: "fifo_perf"}); pol != nil || sh != nil || err != nil {
		t.Errorf("Gavel's policy without sensitivities: %v %v %v, want Gavel untouched", pol, sh, err)
	}
	if err := (Sensitivities{"x": &scheduler.Job{Model: "x"}}).Check(); err == nil {
		t.Error("a sensitivity without a matrix is refused")
	}
}
