package sensitivity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
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

// DecodeSynergyGrid reads a synergy-grid JSON strictly.
func DecodeSynergyGrid(r io.Reader) (*SynergyGrid, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var g SynergyGrid
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("synergy-grid: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("synergy-grid: %w", err)
	}
	return &g, nil
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

var gavelKeyRE = regexp.MustCompile(`^\('(.*)', (\d+)\)$`)

// ParseGavelKey splits a Gavel throughputs key.
func ParseGavelKey(key string) (jobType string, scale int, err error) {
	m := gavelKeyRE.FindStringSubmatch(key)
	if m == nil {
		return "", 0, fmt.Errorf("gavel key %q: want ('<job type>', <scale factor>)", key)
	}
	scale, err = strconv.Atoi(m[2])
	if err != nil {
		return "", 0, fmt.Errorf("gavel key %q: scale factor: %w", key, err)
	}
	return m[1], scale, nil
}

// GavelGPUType is the default GPU type key: the NVML device name in
// lower case with dashes, else the profile's GPU mode ("emulated", "none").
func GavelGPUType(p *Profile) string {
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

// Allocation is the smallest grid point reaching a fraction of the best.
type Allocation struct {
	CPUs            float64 // cores, for the whole job
	MemBytes        int64   // bytes for the whole job (the host's DRAM for "unlimited")
	MemUnlimited    bool    // the smallest was the unlimited column
	GPUs            int
	SamplesPerS     float64
	BestSamplesPerS float64
}

// SmallestAllocation returns the cheapest cell of p's grid (fewest CPUs,
// then least memory) reaching frac of the best throughput.
func SmallestAllocation(p *Profile, frac float64) (Allocation, error) {
	m, err := p.Matrix()
	if err != nil {
		return Allocation{}, err
	}
	best, _, _ := m.Max()
	if !(best > 0) {
		return Allocation{}, errors.New("profile: every cell is 0 samples/s: no allocation reaches a share of the best")
	}
	c, b := m.Smallest(frac)
	v, _ := m.At(c, b)
	a := Allocation{CPUs: c, MemBytes: int64(b), GPUs: max(p.Job.GPUs, 1), SamplesPerS: v, BestSamplesPerS: best}
	a.MemUnlimited = b == m.MemBytes[len(m.MemBytes)-1] && Unlimited(p.Axes.MemLimitBytes[len(p.Axes.MemLimitBytes)-1])
	return a, nil
}

const mebi = 1 << 20

// slurmMem formats bytes for Slurm, rounded up: whole GiB as "NG", else "NM".
func slurmMem(b int64) string {
	mi := (b + mebi - 1) / mebi
	if mi%1024 == 0 {
		return fmt.Sprintf("%dG", mi/1024)
	}
	return fmt.Sprintf("%dM", mi)
}

// ExportSlurm returns the sbatch/srun flags for the smallest allocation
// reaching IdealFraction of the best: "--cpus-per-gpu=N --mem-per-gpu=X",
// CPUs rounded up to whole cores, memory up to whole MiB (G when whole
// GiB). An unlimited memory column stands at the host's DRAM.
func ExportSlurm(p *Profile) (string, Allocation, error) {
	a, err := SmallestAllocation(p, IdealFraction)
	if err != nil {
		return "", a, err
	}
	cpg := int(math.Ceil(a.CPUs/float64(a.GPUs) - 1e-9))
	mpg := (a.MemBytes + int64(a.GPUs) - 1) / int64(a.GPUs)
	return fmt.Sprintf("--cpus-per-gpu=%d --mem-per-gpu=%s", cpg, slurmMem(mpg)), a, nil
}

var slurmRE = regexp.MustCompile(`^--cpus-per-gpu=(\d+) --mem-per-gpu=(\d+)([MG])$`)

// ParseSlurm reads ExportSlurm's flags back: CPUs and bytes per GPU.
func ParseSlurm(s string) (cpusPerGPU int, memBytesPerGPU int64, err error) {
	m := slurmRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, 0, fmt.Errorf("slurm flags %q: want --cpus-per-gpu=N --mem-per-gpu=N[MG]", s)
	}
	cpusPerGPU, _ = strconv.Atoi(m[1])
	n, _ := strconv.ParseInt(m[2], 10, 64)
	unit := int64(mebi)
	if m[3] == "G" {
		unit = 1 << 30
	}
	return cpusPerGPU, n * unit, nil
}

// ExportK8s returns a Kubernetes resources block (YAML, written by hand)
// for the smallest allocation reaching IdealFraction of the best: CPU in
// millicores and memory in MiB (rounded up), requests equal to limits (the
// profile was measured under hard limits), and the job's GPUs as
// nvidia.com/gpu.
func ExportK8s(p *Profile) (string, Allocation, error) {
	a, err := SmallestAllocation(p, IdealFraction)
	if err != nil {
		return "", a, err
	}
	milli := int64(math.Ceil(a.CPUs*1000 - 1e-6))
	mi := (a.MemBytes + mebi - 1) / mebi
	var b strings.Builder
	fmt.Fprintf(&b, "# synergy: %s: smallest allocation reaching %g%% of the best throughput\n", yamlComment(p.Job.Name), IdealFraction*100)
	fmt.Fprintf(&b, "# (%.1f of %.1f samples/s", a.SamplesPerS, a.BestSamplesPerS)
	if a.MemUnlimited {
		b.WriteString("; memory unlimited when profiled: the host's DRAM")
	}
	b.WriteString(")\n")
	b.WriteString("resources:\n")
	for _, sect := range []string{"requests", "limits"} {
		fmt.Fprintf(&b, "  %s:\n", sect)
		fmt.Fprintf(&b, "    cpu: \"%dm\"\n", milli)
		fmt.Fprintf(&b, "    memory: \"%dMi\"\n", mi)
		fmt.Fprintf(&b, "    nvidia.com/gpu: \"%d\"\n", a.GPUs)
	}
	return b.String(), a, nil
}

func yamlComment(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// K8sResources is what ParseK8s reads back.
type K8sResources struct {
	Requests, Limits map[string]string
}

// ParseK8s reads the resources block ExportK8s writes (that shape only:
// two levels of two-space indentation, quoted scalars, # comments).
func ParseK8s(r io.Reader) (*K8sResources, error) {
	out := &K8sResources{Requests: map[string]string{}, Limits: map[string]string{}}
	var sect map[string]string
	sc := bufio.NewScanner(r)
	n := 0
	seenRoot := false
	for sc.Scan() {
		n++
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch {
		case line == "resources:":
			seenRoot = true
		case line == "  requests:":
			sect = out.Requests
		case line == "  limits:":
			sect = out.Limits
		case strings.HasPrefix(line, "    ") && sect != nil:
			k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
			if !ok {
				return nil, fmt.Errorf("k8s line %d: %q is not key: value", n, line)
			}
			uq, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("k8s line %d: value %s is not a quoted string", n, v)
			}
			sect[k] = uq
		default:
			return nil, fmt.Errorf("k8s line %d: unexpected %q", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seenRoot {
		return nil, errors.New("k8s: no resources: block")
	}
	return out, nil
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

// ExportFile loads the profile at path (strictly: a malformed profile is
// refused with the field named), fills its grid when cells are missing,
// and writes it in format to w.
func ExportFile(w io.Writer, path, format string, opt ExportOptions) error {
	p, err := LoadFilled(path)
	if err != nil {
		return err
	}
	if err := Export(w, p, format, opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
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
