package sim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
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
				g, _ := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 12, Split: [3]float64{40, 40, 20}, Seed: 5, MultiGPU: true, NumJobs: 100}, nil)
				cfg := Config{Cluster: c, Strategy: s, Policy: p, RoundSeconds: 300, Window: simcore.All, FirstRoundAtZero: true}
				cfg.OnRound = roundChecker(t, sn+"/"+pn, c, nil)
				res, err := simulate(cfg, g)
				if err != nil {
					t.Fatalf("%s/%s: %v", sn, pn, err)
				}
				if res.JCT.N != 100 {
					t.Errorf("%s/%s: %d of 100 jobs finished", sn, pn, res.JCT.N)
				}
				b, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			a := run()
			if sn == "opt" && !bytes.Equal(a, run()) {
				t.Errorf("opt/%s: two runs differ", pn)
			}
		}
	}
}
