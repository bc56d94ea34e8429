package sensitivity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Export formats.
const (
	FormatSynergyGrid = "synergy-grid" // Synergy's 9×5 normalised table, JSON
	FormatGavel       = "gavel"        // Gavel's throughputs JSON
	FormatSlurm       = "slurm"        // --cpus-per-gpu / --mem-per-gpu flags
	FormatK8s         = "k8s"          // a Kubernetes resources block, YAML
)

// ExportFormats lists the formats Export writes.
func ExportFormats() []string {
	return []string{FormatSynergyGrid, FormatGavel, FormatSlurm, FormatK8s}
}

// SynergyGridVersion tags the synergy-grid JSON.
const SynergyGridVersion = "synergy-grid/v1"

// ServerShape is one server of a cluster: CPU cores, DRAM bytes and GPUs.
type ServerShape struct {
	CPUs     float64 `json:"cpus"`
	MemBytes int64   `json:"mem_bytes"`
	GPUs     int     `json:"gpus"`
}

// DefaultServer is Synergy's default server: 24 CPUs, 500 GB, 8 GPUs.
func DefaultServer() ServerShape { return ServerShape{CPUs: 24, MemBytes: 500e9, GPUs: 8} }

// Validate checks the shape; errors name the field.
func (s ServerShape) Validate() error {
	switch {
	case !(s.CPUs > 0) || math.IsInf(s.CPUs, 0):
		return fmt.Errorf("server cpus: %v is not a positive number", s.CPUs)
	case s.MemBytes <= 0:
		return fmt.Errorf("server mem_bytes: %d is not positive", s.MemBytes)
	case s.GPUs <= 0:
		return fmt.Errorf("server gpus: %d is not positive", s.GPUs)
	}
	return nil
}

// FairShare is the GPU-proportional share per GPU: (CPUs, bytes).
func (s ServerShape) FairShare() (cpusPerGPU, memBytesPerGPU float64) {
	return s.CPUs / float64(s.GPUs), float64(s.MemBytes) / float64(s.GPUs)
}

// SynergyGridCPUs and SynergyGridMemGB are Synergy's table axes on its
// default server, per GPU.
func SynergyGridCPUs() [9]float64  { return [9]float64{1, 2, 3, 4, 5, 6, 9, 12, 24} }
func SynergyGridMemGB() [5]float64 { return [5]float64{20.83, 62.5, 125, 187.5, 250} }

// SynergyGrid is a profile as Synergy's 9×5 sensitivity table, scaled to a
// server shape and normalised to its fair share. The fields the model zoo
// has keep its names (ideal_cpus_per_gpu, ideal_mem_bytes_per_gpu,
// speedup, iter_seconds, batch, table), so our scheduler reads it as a zoo
// model.
type SynergyGrid struct {
	Format string      `json:"format"`
	Name   string      `json:"name"`
	Server ServerShape `json:"server"`
	// CPUsPerGPU and MemBytesPerGPU are the table's axes on this server:
	// Synergy's default axes times (this server's share / the default's).
	CPUsPerGPU     [9]float64 `json:"cpus_per_gpu"`
	MemBytesPerGPU [5]float64 `json:"mem_bytes_per_gpu"`
	// FairCPUsPerGPU, FairMemBytesPerGPU: the share the table is normalised
	// to (1.0), and its throughput.
	FairCPUsPerGPU     float64 `json:"fair_cpus_per_gpu"`
	FairMemBytesPerGPU float64 `json:"fair_mem_bytes_per_gpu"`
	FairSamplesPerS    float64 `json:"fair_samples_per_s"`
	FairClamped        bool    `json:"fair_clamped"`
	// Table[i][j] is throughput at CPUsPerGPU[i], MemBytesPerGPU[j] over
	// the fair share's.
	Table [9][5]float64 `json:"table"`
	// Clamped[i][j] is true where the cell lies outside the profiled range
	// and took the value at the nearest edge of it (never extrapolated).
	Clamped      [9][5]bool `json:"clamped"`
	ClampedCells int        `json:"clamped_cells"`
	// The zoo's scalars: the smallest per-GPU allocation on the table
	// reaching IdealFraction of its best, the table value there, seconds per
	// iteration at the fair share, and the per-GPU batch.
	IdealCPUsPerGPU     float64 `json:"ideal_cpus_per_gpu"`
	IdealMemBytesPerGPU int64   `json:"ideal_mem_bytes_per_gpu"`
	Speedup             float64 `json:"speedup"`
	IterSeconds         float64 `json:"iter_seconds"`
	Batch               int     `json:"batch"`
	GPUs                int     `json:"gpus"`
	// ProfiledCPUs and ProfiledMemBytes are the profile's range per GPU
	// (unlimited memory at the host's DRAM).
	ProfiledCPUs     [2]float64 `json:"profiled_cpus_per_gpu"`
	ProfiledMemBytes [2]float64 `json:"profiled_mem_bytes_per_gpu"`
}

// ExportSynergyGrid builds p's Synergy table for server shape s. p must be
// filled (every cell of its grid has a value: see Fill).
func ExportSynergyGrid(p *Profile, s ServerShape) (*SynergyGrid, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	fc, fm := s.FairShare()
	v, err := AtFairShare(p, fc, fm)
	if err != nil {
		return nil, fmt.Errorf("synergy-grid: %w", err)
	}
	def := DefaultServer()
	dc, dm := def.FairShare()
	out := &SynergyGrid{Format: SynergyGridVersion, Name: v.Name, Server: s, FairCPUsPerGPU: fc, FairMemBytesPerGPU: fm,
		FairSamplesPerS: v.FairSamplesPerS, FairClamped: v.FairClamped, IterSeconds: v.IterSeconds,
		Batch: v.Batch, GPUs: v.GPUs, ProfiledCPUs: v.ProfiledCPUs, ProfiledMemBytes: v.ProfiledMemBytes}
	for i, c := range SynergyGridCPUs() {
		out.CPUsPerGPU[i] = c * fc / dc
	}
	for j, gb := range SynergyGridMemGB() {
		out.MemBytesPerGPU[j] = math.Round(gb * 1e9 * fm / dm)
	}
	for i, c := range out.CPUsPerGPU {
		for j, b := range out.MemBytesPerGPU {
			x, ok := v.PerGPU.At(c, b)
			out.Table[i][j] = round6(x / v.FairSamplesPerS)
			if !ok {
				out.Clamped[i][j] = true
				out.ClampedCells++
			}
		}
	}
	table := out.Matrix()
	c, b, speed := smallestReaching(&table)
	out.IdealCPUsPerGPU, out.IdealMemBytesPerGPU, out.Speedup = c, int64(b), speed
	return out, nil
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func gb(b float64) string { return strconv.FormatFloat(b/1e9, 'g', 4, 64) + " GB" }

// Validate checks a decoded grid; errors name the field.
func (g *SynergyGrid) Validate() error {
	if g.Format != SynergyGridVersion {
		return fmt.Errorf("format: %q, want %q", g.Format, SynergyGridVersion)
	}
	if err := g.Server.Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	for i, c := range g.CPUsPerGPU {
		if !(c > 0) || (i > 0 && c <= g.CPUsPerGPU[i-1]) {
			return fmt.Errorf("cpus_per_gpu[%d]: %v is not positive and ascending", i, c)
		}
	}
	for j, b := range g.MemBytesPerGPU {
		if !(b > 0) || (j > 0 && b <= g.MemBytesPerGPU[j-1]) {
			return fmt.Errorf("mem_bytes_per_gpu[%d]: %v is not positive and ascending", j, b)
		}
	}
	for i := range g.Table {
		for j, v := range g.Table[i] {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("table[%d][%d]: %v is not a non-negative number", i, j, v)
			}
		}
	}
	return nil
}

// Matrix returns the grid as a per-GPU normalised matrix.
func (g *SynergyGrid) Matrix() Matrix {
	m := Matrix{CPUs: g.CPUsPerGPU[:], MemBytes: g.MemBytesPerGPU[:], Unit: UnitNormalized, PerGPU: true}
	m.CPUs = append([]float64(nil), m.CPUs...)
	m.MemBytes = append([]float64(nil), m.MemBytes...)
	for i := range g.Table {
		m.Values = append(m.Values, append([]float64(nil), g.Table[i][:]...))
	}
	return m
}

// Gavel is Gavel's throughputs file: {gpu_type: {"('<job type>', <scale
// factor>)": {"null": steps_per_s}}}; "null" is the key for a job running
// alone (Gavel keys co-located pairs by the other job type).
type Gavel map[string]map[string]map[string]float64

// GavelJobType is the job type Gavel's traces use: "<name> (batch size N)".
func GavelJobType(p *Profile) string {
	return fmt.Sprintf("%s (batch size %d)", p.Job.Name, p.Job.Batch)
}

// GavelKey is the key of a job type at a scale factor (GPUs).
func GavelKey(jobType string, scale int) string { return fmt.Sprintf("('%s', %d)", jobType, scale) }

// GavelGPUType is the default GPU type key: the profile's gpu.type where
// it records one, else the NVML device name in lower case with dashes, else
// the profile's GPU mode ("emulated", "none").
func GavelGPUType(p *Profile) string {
	if p.GPU.Type != "" {
		return p.GPU.Type
	}
	if p.GPU.Mode == GPUModeNVML && len(p.GPU.Devices) > 0 {
		return strings.Join(strings.Fields(strings.ToLower(p.GPU.Devices[0])), "-")
	}
	return p.GPU.Mode
}

// ExportGavel returns p's Gavel throughputs: steps per second (samples/s
// at the fair share of s over batch × GPUs) of the job alone, under gpuType
// (GavelGPUType(p) when empty).
func ExportGavel(p *Profile, s ServerShape, gpuType string) (Gavel, error) {
	grid, err := ExportSynergyGrid(p, s)
	if err != nil {
		return nil, err
	}
	if gpuType == "" {
		gpuType = GavelGPUType(p)
	}
	steps := grid.FairSamplesPerS / float64(grid.Batch*grid.GPUs)
	return Gavel{gpuType: {GavelKey(GavelJobType(p), grid.GPUs): {"null": round6(steps)}}}, nil
}

// ExportOptions are the inputs of the formats beyond the profile.
type ExportOptions struct {
	Server  ServerShape // synergy-grid, gavel
	GPUType string      // gavel ("" = GavelGPUType)
}

// Export writes p in format to w. p must be filled (Fill).
func Export(w io.Writer, p *Profile, format string, opt ExportOptions) error {
	if err := p.Validate(); err != nil { // the reader's checks, for profiles built in memory too
		return err
	}
	var buf bytes.Buffer
	switch format {
	case FormatSynergyGrid:
		g, err := ExportSynergyGrid(p, opt.Server)
		if err != nil {
			return err
		}
		if err := encodeJSON(&buf, g); err != nil {
			return err
		}
	case FormatGavel:
		g, err := ExportGavel(p, opt.Server, opt.GPUType)
		if err != nil {
			return err
		}
		if err := encodeJSON(&buf, g); err != nil {
			return err
		}
	case FormatSlurm:
		s, _, err := ExportSlurm(p)
		if err != nil {
			return err
		}
		buf.WriteString(s + "\n")
	case FormatK8s:
		s, _, err := ExportK8s(p)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	default:
		f := ExportFormats()
		sort.Strings(f)
		return fmt.Errorf("format %q: want one of %s", format, strings.Join(f, ", "))
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Complete reports whether every cell of p's grid has a value.
func (p *Profile) Complete() bool {
	for _, c := range p.Axes.CPUs {
		for _, m := range p.Axes.MemLimitBytes {
			if p.Cell(c, m) == nil {
				return false
			}
		}
	}
	return true
}
