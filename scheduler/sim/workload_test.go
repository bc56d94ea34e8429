package sim

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

func TestParseTrace_Valid(t *testing.T) {
	in := "# recorded\n0,alexnet,0.0,3349,1\n\n1, gnmt ,0.001,26435,2\n2,m5,1505,122162,1\n"
	jobs, err := ParseTraceContext(context.Background(), strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[1]
	if j.ID != 1 || j.Model != "gnmt" || j.ArrivalSeconds != 0.001 || j.Iterations != 26435 || j.GPUs != 2 || j.IterSeconds != 0.12 || j.Class != "language" {
		t.Errorf("job 1 = %+v", j)
	}
	if jobs[2].Speedup != 2.5 || jobs[2].Matrix == nil {
		t.Errorf("job 2 speed-up %v", jobs[2].Speedup)
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, jobs); err != nil {
		t.Fatal(err)
	}
	if want := "0,alexnet,0,3349,1\n1,gnmt,0.001,26435,2\n2,m5,1505,122162,1\n"; b.String() != want {
		t.Errorf("written %q, want %q", b.String(), want)
	}
}

func TestParseTrace_Errors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0,alexnet,0,10,1\n1,alexnet,0,10\n", "line 2: 4 fields"},
		{"x,alexnet,0,10,1", "line 1: job_id \"x\""},
		{"0,alexnet,0,10,1\n0,res18,5,10,1", "line 2: job_id 0 repeats line 1"},
		{"0,vgg,0,10,1", "line 1: model: zoo: no model \"vgg\""},
		{"0,alexnet,-5,10,1", "arrival_seconds \"-5\""},
		{"0,alexnet,NaN,10,1", "arrival_seconds \"NaN\""},
		{"0,alexnet,0,0,1", "total_iterations \"0\""},
		{"0,alexnet,0,1.5,1", "total_iterations \"1.5\""},
		{"0,alexnet,0,10,0", "gpus \"0\""},
		{"\n# only a comment\n", "no jobs"},
	}
	for _, c := range cases {
		_, err := ParseTraceContext(context.Background(), strings.NewReader(c.in), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add("0,alexnet,0.0,3349,1\n1,gnmt,0.001,26435,1\n")
	f.Add("3,m5,1505,122162,1")
	f.Add("# c\n\n7,lstm,1e3,5,16\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ParseTraceContext(context.Background(), strings.NewReader(in), nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		for _, j := range jobs {
			if err := j.Validate(); err != nil {
				t.Fatalf("accepted an invalid job: %v", err)
			}
		}
		var b bytes.Buffer
		if err := WriteTrace(&b, jobs); err != nil {
			t.Fatal(err)
		}
		again, err := ParseTraceContext(context.Background(), &b, nil)
		if err != nil || len(again) != len(jobs) {
			t.Fatalf("round trip: %v (%d vs %d jobs)", err, len(again), len(jobs))
		}
		for i := range jobs {
			if a, b := again[i], jobs[i]; a.ID != b.ID || a.ArrivalSeconds != b.ArrivalSeconds || a.Iterations != b.Iterations || a.GPUs != b.GPUs || a.Model != b.Model {
				t.Fatalf("round trip changed job %d", i)
			}
		}
	})
}

// TestGenerator_Distribution checks the generator against Synergy's:
// class shares follow the split exactly (deficit assignment), models
// round-robin within a class, 20% long jobs, durations within
// 10^1.5–10^4 minutes, mean inter-arrival 3600/rate s.
func TestGenerator_Distribution(t *testing.T) {
	const n = 20000
	g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: 1, NumJobs: n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	models := map[string]int{}
	long := 0
	var last float64
	for i, j := range drain(t, g, n) {
		if j.ID != i || j.GPUs != 1 || j.ArrivalSeconds <= last || j.ArrivalSeconds != math.Trunc(j.ArrivalSeconds) {
			t.Fatalf("job %d: id %d gpus %d arrival %v after %v", i, j.ID, j.GPUs, j.ArrivalSeconds, last)
		}
		last = j.ArrivalSeconds
		classes[j.Class]++
		models[j.Model]++
		minutes := float64(j.Iterations) * j.IterSeconds / 60
		if minutes < math.Pow(10, 1.5)*0.99 || minutes > 1e4 {
			t.Fatalf("job %d lasts %v min", i, minutes)
		}
		if minutes >= 1000 {
			long++
		}
	}
	// 20/70/10 of 20000 = 4000/14000/2000, ±1 from the deficit rule
	for c, want := range map[string]int{"image": 4000, "language": 14000, "speech": 2000} {
		if d := classes[c] - want; d < -1 || d > 1 {
			t.Errorf("%s: %d jobs, want %d", c, classes[c], want)
		}
	}
	// round-robin: 4000 image jobs over 5 models = 800 each
	if models["alexnet"] != 800 || models["shufflenet"] != 800 || models["m5"] != 1000 {
		t.Errorf("models %v", models)
	}
	if frac := float64(long) / n; math.Abs(frac-0.2) > 0.015 {
		t.Errorf("long-job fraction %v, want 0.2", frac)
	}
	// mean inter-arrival 400 s plus the ceil's half second on average
	if mean := last / n; math.Abs(mean-400.5)/400.5 > 0.03 {
		t.Errorf("mean inter-arrival %v s", mean)
	}
}

func TestGeneratorConfig_Errors(t *testing.T) {
	cases := []struct {
		cfg  GeneratorConfig
		want string
	}{
		{GeneratorConfig{JobsPerHour: 0, Split: [3]float64{20, 70, 10}}, "jobs_per_hour"},
		{GeneratorConfig{JobsPerHour: 1, Split: [3]float64{20, 70, 20}}, "sum to 110"},
		{GeneratorConfig{JobsPerHour: 1, Split: [3]float64{-1, 91, 10}}, "split[0]"},
		{GeneratorConfig{JobsPerHour: 1, Split: [3]float64{20, 70, 10}, NumJobs: -1}, "num_jobs"},
	}
	for _, c := range cases {
		if _, err := NewCatalogGenerator(c.cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}
