package zoo

import (
	"math"
	"testing"
)

// TestModels_ScalarsMatchTables checks, for every model, that the table
// holds 1.0 at the fair share (3 CPUs, 62.5 GB per GPU) and Speedup at the
// ideal allocation, and that Speedup is the table's maximum — the facts the
// scheduler relies on when it reads only the four scalars.
func TestModels_ScalarsMatchTables(t *testing.T) {
	for _, m := range All() {
		t.Run(m.Name, func(t *testing.T) {
			mx := m.Matrix()
			if err := mx.Validate(); err != nil {
				t.Fatal(err)
			}
			if v, ok := mx.At(3, 62.5*GB); !ok || v != 1 {
				t.Errorf("fair share value = %v (in range %v), want 1", v, ok)
			}
			best, _, _ := mx.Max()
			if best != m.Speedup {
				t.Errorf("table max %v != speedup %v", best, m.Speedup)
			}
			// The language models' ideal memory (20 GB) lies below the
			// grid; At clamps and says so.
			v, _ := mx.At(m.IdealCPUsPerGPU, float64(m.IdealMemBytesPerGPU))
			if math.Abs(v-m.Speedup) > 1e-12 {
				t.Errorf("value at ideal (%v CPUs, %v B) = %v, want speedup %v", m.IdealCPUsPerGPU, m.IdealMemBytesPerGPU, v, m.Speedup)
			}
			if m.IterSeconds <= 0 || m.Batch <= 0 {
				t.Errorf("iter_seconds %v batch %v", m.IterSeconds, m.Batch)
			}
		})
	}
}

// TestModels_Cells spot-checks cells typed from simulator/models/*_1.py.
func TestModels_Cells(t *testing.T) {
	// cells[model] are (row, column, value): row i is CPUsPerGPU()[i],
	// column j is MemGBPerGPU()[j].
	cells := map[string][][3]float64{
		"alexnet":    {{7, 1, 2}, {7, 2, 2.94}}, // 12 CPUs, 62.5 GB and 125 GB
		"shufflenet": {{8, 4, 2.89}},
		"res18":      {{6, 1, 2.4}, {3, 0, 0.1}},
		"res50":      {{0, 1, 0.4}},
		"m5":         {{5, 1, 1.5}, {5, 3, 2.5}, {4, 4, 1.4}}, // 6 CPUs, 62.5 GB and 187.5 GB
		"mobilenet":  {{4, 3, 1.49}},
		"deepspeech": {{1, 2, 0.66}},
		"lstm":       {{0, 0, 1}},
		"gnmt":       {{3, 0, 1}},
	}
	for model, want := range cells {
		m, err := Lookup(model)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range want {
			row, col := int(c[0]), int(c[1])
			if got := m.Table[row][col]; got != c[2] {
				t.Errorf("%s[%d][%d] = %v, want %v", model, row, col, got, c[2])
			}
		}
	}
	if _, err := Lookup("vgg"); err == nil {
		t.Error("Lookup(vgg) succeeded")
	}
}

// TestAll_OrderAndClasses pins the class-id order the generator and the
// trace loader depend on.
func TestAll_OrderAndClasses(t *testing.T) {
	want := []struct{ name, class string }{
		{"alexnet", ClassImage}, {"res18", ClassImage}, {"res50", ClassImage}, {"mobilenet", ClassImage}, {"shufflenet", ClassImage},
		{"gnmt", ClassLanguage}, {"transformer", ClassLanguage}, {"lstm", ClassLanguage},
		{"m5", ClassSpeech}, {"deepspeech", ClassSpeech},
	}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("%d models, want %d", len(all), len(want))
	}
	for i, w := range want {
		if all[i].Name != w.name || all[i].Class != w.class {
			t.Errorf("model %d = %s/%s, want %s/%s", i, all[i].Name, all[i].Class, w.name, w.class)
		}
	}
	all[0].Table[0][0] = 99
	if All()[0].Table[0][0] == 99 {
		t.Error("All shares state between calls")
	}
}
