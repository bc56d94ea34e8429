package sim

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

func TestQuickAnchor(t *testing.T) {
	c, _ := scheduler.Preset("default")
	for _, sn := range []string{"tune", "fair"} {
		s, _ := scheduler.NewStrategy(sn)
		for seed := uint64(1); seed <= 3; seed++ {
			g, err := NewGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			res, err := Run(Config{Cluster: &c, Strategy: s, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: Window{4000, 4999}, FirstRoundAtZero: true}, g)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s seed %d: mean %.2f h p99 %.1f rounds %d in %v", sn, seed, res.JCT.MeanHours, res.JCT.P99Hours, res.Rounds, time.Since(t0))
		}
	}
}

func TestDumpTrace(t *testing.T) {
	out := os.Getenv("DUMP_TRACE")
	if out == "" {
		t.Skip()
	}
	seed, _ := strconv.Atoi(os.Getenv("DUMP_SEED"))
	n, _ := strconv.Atoi(os.Getenv("DUMP_N"))
	rate, _ := strconv.ParseFloat(os.Getenv("DUMP_RATE"), 64)
	g, _ := NewGenerator(GeneratorConfig{JobsPerHour: rate, Split: [3]float64{20, 70, 10}, Seed: uint64(seed), NumJobs: n})
	var jobs []*scheduler.Job
	for {
		j, ok := g.Next()
		if !ok {
			break
		}
		jobs = append(jobs, j)
	}
	f, _ := os.Create(out)
	defer f.Close()
	WriteTrace(f, jobs)
}

func TestReplayTrace(t *testing.T) {
	path := os.Getenv("REPLAY")
	if path == "" {
		t.Skip()
	}
	jobs, err := LoadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := scheduler.Preset("default")
	lo, _ := strconv.Atoi(os.Getenv("WLO"))
	hi, _ := strconv.Atoi(os.Getenv("WHI"))
	for _, sn := range strings.Split(os.Getenv("STRATS"), ",") {
		for _, pn := range strings.Split(os.Getenv("POLS"), ",") {
			s, _ := scheduler.NewStrategy(sn)
			p, _ := scheduler.NewPolicy(pn)
			res, err := Run(Config{Cluster: &c, Strategy: s, Policy: p, RoundSeconds: 300, Window: Window{lo, hi}}, &List{Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s+%s: window n=%d mean %.4f h; all n=%d mean %.4f end %v", pn, sn, res.JCT.N, res.JCT.MeanHours, res.AllJobs.N, res.AllJobs.MeanHours, res.EndSeconds)
		}
	}
}
