package zoo

import (
	"fmt"
	"sort"

	"github.com/synergy-sched/synergy/sensitivity"
)

// GB is the original's memory unit in bytes (decimal; see the package doc).
const GB = 1e9

// Classes of models, as the generator splits them.
const (
	ClassImage    = "image"
	ClassLanguage = "language"
	ClassSpeech   = "speech"
)

// CPUsPerGPU is the table's CPU axis: CPU cores per GPU (Synergy's grid,
// defined once, in sensitivity).
func CPUsPerGPU() []float64 { a := sensitivity.SynergyGridCPUs(); return a[:] }

// MemGBPerGPU is the table's memory axis in GB per GPU.
func MemGBPerGPU() []float64 { a := sensitivity.SynergyGridMemGB(); return a[:] }

// Model is one entry of the zoo.
type Model struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	// IdealCPUsPerGPU and IdealMemBytesPerGPU are the smallest per-GPU
	// allocation that reaches Speedup (the original's `cpus` and `mem`).
	IdealCPUsPerGPU     float64 `json:"ideal_cpus_per_gpu"`
	IdealMemBytesPerGPU int64   `json:"ideal_mem_bytes_per_gpu"`
	// Speedup is the throughput at the ideal allocation relative to the
	// GPU-proportional share (1.0).
	Speedup float64 `json:"speedup"`
	// IterSeconds is seconds per iteration at the fair share.
	IterSeconds float64 `json:"iter_seconds"`
	Batch       int     `json:"batch"`
	// Table[i][j] is normalised throughput at CPUsPerGPU()[i] and
	// MemGBPerGPU()[j].
	Table [9][5]float64 `json:"table"`
}

// Matrix returns the model's table as a per-GPU normalised matrix with
// memory in bytes.
func (m Model) Matrix() sensitivity.Matrix {
	out := sensitivity.Matrix{
		CPUs:   CPUsPerGPU(),
		Unit:   sensitivity.UnitNormalized,
		PerGPU: true,
	}
	for _, g := range MemGBPerGPU() {
		out.MemBytes = append(out.MemBytes, g*GB)
	}
	out.Values = make([][]float64, len(m.Table))
	for i := range m.Table {
		out.Values[i] = append([]float64(nil), m.Table[i][:]...)
	}
	return out
}

// All returns the ten models in Synergy's class-id order: image (alexnet,
// res18, res50, mobilenet, shufflenet), language (gnmt, transformer, lstm),
// speech (m5, deepspeech). The class id of a model is its index here. Each
// call returns fresh values.
func All() []Model {
	// rows builds a table whose first column (20.83 GB) is 0.1 and whose
	// other four columns equal byCPU[i] (the common shape in the zoo).
	rows := func(byCPU [9]float64) (t [9][5]float64) {
		for i, v := range byCPU {
			t[i] = [5]float64{0.1, v, v, v, v}
		}
		return t
	}
	alex := func(top float64) [9][5]float64 {
		t := rows([9]float64{0.3, 0.66, 1, 1.25, 1.53, 1.75, 2, 2, 2})
		t[7] = [5]float64{0.1, 2, top, top, top}
		t[8] = t[7]
		return t
	}
	ones := func() (t [9][5]float64) {
		for i := range t {
			t[i] = [5]float64{1, 1, 1, 1, 1}
		}
		return t
	}
	m5 := rows([9]float64{0.3, 0.66, 1, 1.2, 1.4, 0, 0, 0, 0})
	for i := 5; i < 9; i++ {
		m5[i] = [5]float64{0.1, 1.5, 2, 2.5, 2.5}
	}
	// The language models' ideal memory is int(62.5/3) = 20 GB in the
	// original.
	return []Model{
		{Name: "alexnet", Class: ClassImage, IdealCPUsPerGPU: 12, IdealMemBytesPerGPU: 125e9, Speedup: 2.94, IterSeconds: 0.6, Batch: 512, Table: alex(2.94)},
		{Name: "res18", Class: ClassImage, IdealCPUsPerGPU: 9, IdealMemBytesPerGPU: 62.5e9, Speedup: 2.4, IterSeconds: 0.64, Batch: 512, Table: rows([9]float64{0.37, 0.72, 1, 1.3, 1.53, 1.75, 2.4, 2.4, 2.4})},
		{Name: "res50", Class: ClassImage, IdealCPUsPerGPU: 4, IdealMemBytesPerGPU: 62.5e9, Speedup: 1.15, IterSeconds: 0.78, Batch: 512, Table: rows([9]float64{0.4, 0.74, 1, 1.15, 1.15, 1.15, 1.15, 1.15, 1.15})},
		{Name: "mobilenet", Class: ClassImage, IdealCPUsPerGPU: 6, IdealMemBytesPerGPU: 62.5e9, Speedup: 1.55, IterSeconds: 0.71, Batch: 512, Table: rows([9]float64{0.37, 0.72, 1, 1.3, 1.49, 1.55, 1.55, 1.55, 1.55})},
		{Name: "shufflenet", Class: ClassImage, IdealCPUsPerGPU: 12, IdealMemBytesPerGPU: 125e9, Speedup: 2.89, IterSeconds: 0.615, Batch: 512, Table: alex(2.89)},
		{Name: "gnmt", Class: ClassLanguage, IdealCPUsPerGPU: 1, IdealMemBytesPerGPU: 20e9, Speedup: 1, IterSeconds: 0.12, Batch: 128, Table: ones()},
		{Name: "transformer", Class: ClassLanguage, IdealCPUsPerGPU: 1, IdealMemBytesPerGPU: 20e9, Speedup: 1, IterSeconds: 0.67, Batch: 128, Table: ones()},
		{Name: "lstm", Class: ClassLanguage, IdealCPUsPerGPU: 1, IdealMemBytesPerGPU: 20e9, Speedup: 1, IterSeconds: 0.011, Batch: 20, Table: ones()},
		{Name: "m5", Class: ClassSpeech, IdealCPUsPerGPU: 6, IdealMemBytesPerGPU: 187.5e9, Speedup: 2.5, IterSeconds: 0.6, Batch: 512, Table: m5},
		{Name: "deepspeech", Class: ClassSpeech, IdealCPUsPerGPU: 3, IdealMemBytesPerGPU: 62.5e9, Speedup: 1, IterSeconds: 0.757, Batch: 20, Table: rows([9]float64{0.3, 0.66, 1, 1, 1, 1, 1, 1, 1})},
	}
}

// Lookup returns the model called name.
func Lookup(name string) (Model, error) {
	for _, m := range All() {
		if m.Name == name {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("zoo: no model %q (have %v)", name, Names())
}

// Names lists the models' names, sorted.
func Names() []string {
	var out []string
	for _, m := range All() {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// Classes returns the class names in the generator's split order (image,
// language, speech).
func Classes() []string { return []string{ClassImage, ClassLanguage, ClassSpeech} }
