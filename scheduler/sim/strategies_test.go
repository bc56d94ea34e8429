package sim

import (
	"bytes"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// TestRun_NewStrategiesInvariants runs OPT, DRF and Tetris (and their +tune
// variants) through the simulator on a multi-GPU workload: no server over
// capacity in any round, no job placed twice or on the wrong GPU count,
// every job finishes, and OPT's run is byte-identical when repeated.
func TestRun_NewStrategiesInvariants(t *testing.T) {
	for _, sn := range []string{"opt", "drf", "drf+tune", "tetris", "tetris+tune"} {
		for _, pn := range []string{"fifo", "las"} {
			run := func() []byte {
				s, _ := scheduler.NewStrategy(sn)
				p, _ := scheduler.NewPolicy(pn)
				c := defaultCluster(t)
				g, _ := NewGenerator(GeneratorConfig{JobsPerHour: 12, Split: [3]float64{40, 40, 20}, Seed: 5, MultiGPU: true, NumJobs: 100})
				cfg := Config{Cluster: c, Strategy: s, Policy: p, RoundSeconds: 300, Window: All, FirstRoundAtZero: true}
				cfg.OnRound = func(now float64, r *scheduler.Round, _ []*scheduler.Active) {
					for i, srv := range c.Servers {
						u := r.Used(i)
						if u.GPUs > srv.GPUs || u.CPUs > srv.CPUs+1e-9 || u.MemBytes > float64(srv.MemBytes)+1e-3 {
							t.Fatalf("%s/%s at %v: %s used %+v", sn, pn, now, srv.Name, u)
						}
					}
					seen := map[int]bool{}
					r.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) {
						if seen[j.ID] || a.Total().GPUs != j.GPUs {
							t.Fatalf("%s/%s: job %d placed twice or on %d GPUs of %d", sn, pn, j.ID, a.Total().GPUs, j.GPUs)
						}
						seen[j.ID] = true
					})
				}
				res, err := Run(cfg, g)
				if err != nil {
					t.Fatalf("%s/%s: %v", sn, pn, err)
				}
				if res.JCT.N != 100 {
					t.Errorf("%s/%s: %d of 100 jobs finished", sn, pn, res.JCT.N)
				}
				var b bytes.Buffer
				if err := res.WriteJSON(&b); err != nil {
					t.Fatal(err)
				}
				return b.Bytes()
			}
			a := run()
			if sn == "opt" && !bytes.Equal(a, run()) {
				t.Errorf("opt/%s: two runs differ", pn)
			}
		}
	}
}
