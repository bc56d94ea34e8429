package gavel

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

func TestReadTraceRoundTrip(t *testing.T) {
	path := filepath.Join("testdata", "reference", "synthetic", "continuous.trace")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := ReadTrace(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 100 {
		t.Fatalf("%d jobs, want 100", len(jobs))
	}
	var out bytes.Buffer
	if err := WriteTrace(&out, jobs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), raw) {
		t.Fatalf("written trace differs from the file Gavel's Job.__str__ format wrote")
	}
}

func TestReadTraceErrorsNameTheLine(t *testing.T) {
	good := "A (batch size 1)\tcmd\twd\t--n\t0\t100\t1\t1\t-1.000000\t0.000000"
	cases := map[string]string{
		"fields":      good + "\nonly\tthree\tfields",
		"steps":       good + "\n" + strings.Replace(good, "\t100\t", "\tx\t", 1),
		"zero steps":  good + "\n" + strings.Replace(good, "\t100\t", "\t0\t", 1),
		"scale":       good + "\n" + strings.Replace(good, "\t100\t1\t", "\t100\t0\t", 1),
		"priority":    good + "\n" + strings.Replace(good, "\t1\t-1", "\t0\t-1", 1),
		"arrival":     good + "\n" + strings.Replace(good, "\t0.000000", "\t-5", 1),
		"order":       strings.Replace(good, "\t0.000000", "\t10", 1) + "\n" + good,
		"data dir":    good + "\n" + strings.Replace(good, "\t0\t100", "\t2\t100", 1),
		"nan arrival": good + "\n" + strings.Replace(good, "\t0.000000", "\tNaN", 1),
	}
	for name, in := range cases {
		_, err := ReadTrace(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: error %v, want one naming line 2", name, err)
		}
	}
	if _, err := ReadTrace(strings.NewReader("\n\n")); err == nil {
		t.Error("empty trace accepted")
	}
}

func TestParseThroughputs(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "reference", "synthetic", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tp.WorkerTypes(), ","); got != "k80,p100,v100" {
		t.Fatalf("worker types %s", got)
	}
	for _, wt := range tp.WorkerTypes() {
		for k, v := range tp.Isolated[wt] {
			if v < 0 || (v == 0 && wt != "k80") { // our synthetic file has one model that K80s cannot run
				t.Errorf("%s %s: isolated %v", wt, k, v)
			}
			for p := range tp.Colocated[wt][k] {
				if p.ScaleFactor != k.ScaleFactor {
					t.Errorf("%s %s: partner %s has another scale factor", wt, k, p)
				}
			}
		}
	}
	bad := map[string]string{
		"not json":   `{`,
		"no null":    `{"v100": {"('A', 1)": {}}}`,
		"bad key":    `{"v100": {"A": {"null": 1}}}`,
		"negative":   `{"v100": {"('A', 1)": {"null": -1}}}`,
		"pair shape": `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}}}`,
		"scale 0":    `{"v100": {"('A', 0)": {"null": 1}}}`,
		"string":     `{"v100": {"('A', 1)": {"null": "fast"}}}`,
	}
	for name, in := range bad {
		if _, err := ParseThroughputs([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	tp2, err := ParseThroughputs([]byte(`{"h100": {"('A (batch size 2)', 4)": {"null": 3.5, "('B', 4)": [1.5, 2]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	k := JobType{"A (batch size 2)", 4}
	if tp2.Isolated["h100"][k] != 3.5 || tp2.Colocated["h100"][k][JobType{"B", 4}] != [2]float64{1.5, 2} {
		t.Fatalf("parsed %+v", tp2)
	}
}

func TestParseClusterSpec(t *testing.T) {
	c, err := ParseClusterSpec("8:16:24", "")
	if err != nil || c.String() != "v100=8:p100=16:k80=24" || c.TotalGPUs() != 48 {
		t.Fatalf("%v %v", c, err)
	}
	c, err = ParseClusterSpec("h100=4:a100=8", "4:8")
	if err != nil || c.Types[0] != "h100" || c.GPUsPerServer[1] != 8 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "1:2", "a=1:a=2", "x:y:z", "0:0:0", "-1:2:3"} {
		if _, err := ParseClusterSpec(bad, ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseClusterSpec("8:16:24", "1:0:1"); err == nil {
		t.Error("0 GPUs per server accepted")
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add("A (batch size 1)\tcmd\twd\t--n\t0\t100\t1\t1\t-1.000000\t0.000000\n")
	f.Add("x\ty\tz\tw\t1\t5\t8\t5\t1.2\t3.5\nx\ty\tz\tw\t1\t5\t8\t5\t1.2\t1")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadTrace(strings.NewReader(in))
		if err != nil {
			return
		}
		for i, j := range jobs {
			if j.ScaleFactor < 1 || j.TotalSteps < 1 || j.PriorityWeight <= 0 || j.ArrivalS < 0 || (i > 0 && j.ArrivalS < jobs[i-1].ArrivalS) {
				t.Fatalf("accepted invalid job %+v", j)
			}
		}
		var b bytes.Buffer
		if err := WriteTrace(&b, jobs); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseThroughputs(f *testing.F) {
	f.Add(`{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1, 2]}}}`)
	f.Add(`{"k80": {"('A (batch size 2)', 8)": {"null": 0}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		tp, err := ParseThroughputs([]byte(in))
		if err != nil {
			return
		}
		for _, wt := range tp.WorkerTypes() {
			for k, v := range tp.Isolated[wt] {
				if v < 0 || k.ScaleFactor < 1 {
					t.Fatalf("accepted %s %s %v", wt, k, v)
				}
			}
		}
	})
}

func TestSpecFromTypedCluster(t *testing.T) {
	c := scheduler.Cluster{Name: "mixed", Servers: []scheduler.Server{
		{Name: "a", GPUs: 8, CPUs: 64, MemBytes: 1, GPUType: "h100"},
		{Name: "b", GPUs: 4, CPUs: 32, MemBytes: 1, GPUType: "l40s"},
		{Name: "c", GPUs: 8, CPUs: 64, MemBytes: 1, GPUType: "h100"},
	}}
	spec, err := SpecFromCluster(c)
	if err != nil || spec.String() != "h100=16:l40s=4" || spec.GPUsPerServer[0] != 8 || spec.GPUsPerServer[1] != 4 {
		t.Fatalf("%+v %v", spec, err)
	}
	c.Servers[1].GPUType = ""
	if _, err := SpecFromCluster(c); err == nil || !strings.Contains(err.Error(), "servers[1]") {
		t.Fatalf("untyped server: %v", err)
	}
	c.Servers[1].GPUType, c.Servers[2].GPUs = "l40s", 4
	if _, err := SpecFromCluster(c); err == nil || !strings.Contains(err.Error(), "servers[2]") {
		t.Fatalf("two server sizes in a type: %v", err)
	}
}
