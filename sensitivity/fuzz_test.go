package sensitivity

import (
	"math"
	"testing"
)

// FuzzFill: whatever the measured cells, Fill either refuses (no CPU
// point) or predicts every cell with a finite, non-negative value and
// interval, and the profile stays valid.
func FuzzFill(f *testing.F) {
	f.Add([]byte{1, 200, 5, 2, 100, 3, 7, 27, 1}, uint8(0), false)
	f.Add([]byte{0, 0, 0, 3, 255, 255, 8, 1, 0, 9, 0, 0}, uint8(3), true)
	f.Fuzz(func(t *testing.T, data []byte, anonMiB uint8, noDataset bool) {
		cpus := []float64{0.25, 0.5, 1}
		mems := []int64{16 * mib, 64 * mib, 192 * mib, 0}
		p := &Profile{SchemaVersion: SchemaVersion, GPU: GPUInfo{Mode: GPUModeNone}, Job: JobInfo{Batch: 16, GPUs: 1},
			Host: HostInfo{DRAMBytes: 1 << 30, DatasetBytes: 128 * mib, DatasetFiles: 100, ColdReadMBPerS: 50},
			Axes: Axes{CPUs: cpus, MemLimitBytes: mems}}
		if noDataset {
			p.Host.DatasetBytes, p.Host.DatasetFiles = 0, 0
		}
		for i := 0; i+2 < len(data) && i < 36; i += 3 {
			k := int(data[i]) % (len(cpus) * len(mems))
			c, m := cpus[k/len(mems)], mems[k%len(mems)]
			if p.Cell(c, m) != nil {
				continue
			}
			cell := Cell{CPUs: c, MemLimitBytes: m, Measured: true, Phase: PhaseGrid, SamplesPerS: float64(data[i+1]) * 3, SamplesPerSCI95: float64(data[i+2]) / 4,
				Stats: &PointStats{Workers: 1, Iterations: 40, StopReason: "converged", MemAnonBytes: int64(anonMiB) * mib, MetricsSource: MetricsStream, DataWaitFraction: float64(data[i+2]%100) / 100}}
			switch data[i+2] % 7 {
			case 0:
				cell.Failure, cell.SamplesPerS, cell.SamplesPerSCI95 = &Failure{Class: FailOOMKilled}, 0, 0
			case 1:
				cell.Phase = PhaseValidate
			}
			if cell.SamplesPerS == 0 && cell.Failure == nil {
				// as the profiler records a point that measured nothing
				cell.Failure, cell.SamplesPerSCI95 = &Failure{Class: FailNoProgress}, 0
			}
			p.SetCell(cell)
		}
		if err := Fill(p); err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("filled profile invalid: %v", err)
		}
		for _, c := range p.Cells {
			if math.IsNaN(c.SamplesPerS) || math.IsInf(c.SamplesPerS, 0) || c.SamplesPerS < 0 ||
				math.IsNaN(c.SamplesPerSCI95) || math.IsInf(c.SamplesPerSCI95, 0) || c.SamplesPerSCI95 < 0 {
				t.Fatalf("cell %+v: not a finite non-negative prediction", c)
			}
		}
		if !p.Complete() {
			t.Fatal("Fill left holes")
		}
	})
}
