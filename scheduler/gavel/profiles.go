package gavel

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ProfileRow is one throughput a profile gave: a job on one GPU type, read
// at one cell of the job's CPU × memory matrix. Emulated says no GPU ran
// (the profile's gpu.mode is emulated: its step was a timed wait of the
// named type's measured step time); such a row stays labelled wherever rows
// are listed.
type ProfileRow struct {
	File     string `json:"file"`
	JobType  string `json:"job_type"` // Gavel's key, ('<name> (batch size B)', GPUs)
	GPUType  string `json:"gpu_type"`
	Emulated bool   `json:"emulated"`
	// CPUsPerGPU and MemBytesPerGPU are the cell read: the GPU-proportional
	// share of the type's servers (Share). Clamped: the share lies outside
	// the profiled range and the nearest edge was read (never extrapolated).
	CPUsPerGPU     float64 `json:"cpus_per_gpu"`
	MemBytesPerGPU float64 `json:"mem_bytes_per_gpu"`
	Clamped        bool    `json:"clamped,omitempty"`
	// SamplesPerS is the job's throughput there; StepsPerS the row's value,
	// SamplesPerS ÷ (per-GPU batch × GPUs), as Gavel counts steps.
	SamplesPerS float64 `json:"samples_per_s"`
	StepsPerS   float64 `json:"steps_per_s"`
}

// Share is the GPU-proportional CPUs and memory per GPU that a GPU type's
// servers give a job: the cell of a profile that stands for that type.
type Share func(gpuType string) (cpusPerGPU, memBytesPerGPU float64)

// DefaultShare is Synergy's default server's share for every type (24 CPUs
// and 500 GB over 8 GPUs: 3 CPUs and 62.5 GB per GPU), for a cluster spec
// that says nothing of CPUs and memory.
func DefaultShare(string) (float64, float64) { return sensitivity.DefaultServer().FairShare() }

// ClusterShare is each type's share on a typed cluster: its servers' CPUs
// and memory over their GPUs (summed over the type's servers); a type the
// cluster does not have gets DefaultShare.
func ClusterShare(c scheduler.Cluster) Share {
	type sum struct{ cpus, mem, gpus float64 }
	by := map[string]*sum{}
	for _, s := range c.Servers {
		if by[s.GPUType] == nil {
			by[s.GPUType] = &sum{}
		}
		b := by[s.GPUType]
		b.cpus, b.mem, b.gpus = b.cpus+s.CPUs, b.mem+float64(s.MemBytes), b.gpus+float64(s.GPUs)
	}
	return func(t string) (float64, float64) {
		if b := by[t]; b != nil && b.gpus > 0 {
			return b.cpus / b.gpus, b.mem / b.gpus
		}
		return DefaultShare(t)
	}
}

// ProfilePaths expands a comma-separated list of profile files and
// directories: a directory stands for its *.json files, in name order.
func ProfilePaths(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, f)
			continue
		}
		m, err := filepath.Glob(filepath.Join(f, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: a directory without *.json profiles", f)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no profiles given")
	}
	return out, nil
}

// profileJob is what makes two profiles the same job.
type profileJob struct {
	file        string
	batch, gpus int
}

// ThroughputsFromProfiles turns profiles into throughput rows: one job type
// per job.name (Gavel's key '<name> (batch size B)' at job.gpus, at least
// 1), one row entry per GPU type (gpu.type), read at the type's share. The
// profiles of one job.name must agree on job.batch and job.gpus, and give
// each GPU type once; a profile must name its type. Errors name the file
// and the field.
func ThroughputsFromProfiles(paths []string, share Share) (*Throughputs, []ProfileRow, error) {
	if share == nil {
		share = DefaultShare
	}
	t := &Throughputs{Isolated: map[string]map[JobType]float64{}, Colocated: map[string]map[JobType]map[JobType][2]float64{}}
	jobs := map[string]profileJob{}
	from := map[string]string{} // job type + "\x00" + GPU type → file
	var rows []ProfileRow
	for _, path := range paths {
		p, err := sensitivity.LoadFilled(path)
		if err != nil {
			return nil, nil, err
		}
		row, jt, err := profileRow(path, p, share)
		if err != nil {
			return nil, nil, err
		}
		if err := sameJob(jobs, path, p); err != nil {
			return nil, nil, err
		}
		k := jt.String() + "\x00" + row.GPUType
		if prev, dup := from[k]; dup {
			return nil, nil, fmt.Errorf("%s: gpu.type %q: %s already gives job %s on %s (one profile per job and GPU type)", path, row.GPUType, prev, jt, row.GPUType)
		}
		from[k] = path
		if t.Isolated[row.GPUType] == nil {
			t.Isolated[row.GPUType] = map[JobType]float64{}
			t.Colocated[row.GPUType] = map[JobType]map[JobType][2]float64{}
		}
		t.Isolated[row.GPUType][jt] = row.StepsPerS
		rows = append(rows, row)
	}
	return t, rows, nil
}

// sameJob checks that a profile agrees with the earlier profiles of its
// job.name on the batch and the GPU count.
func sameJob(jobs map[string]profileJob, path string, p *sensitivity.Profile) error {
	j := profileJob{file: path, batch: p.Job.Batch, gpus: max(p.Job.GPUs, 1)}
	prev, ok := jobs[p.Job.Name]
	if !ok {
		jobs[p.Job.Name] = j
		return nil
	}
	if prev.batch != j.batch {
		return fmt.Errorf("%s: job.batch is %d, but %s (job.name %q) has %d: the profiles of one job must measure one batch (name another batch as another job)", path, j.batch, prev.file, p.Job.Name, prev.batch)
	}
	if prev.gpus != j.gpus {
		return fmt.Errorf("%s: job.gpus is %d, but %s (job.name %q) has %d: the profiles of one job must measure one GPU count", path, j.gpus, prev.file, p.Job.Name, prev.gpus)
	}
	return nil
}

// profileRow reads one profile at its type's share.
func profileRow(path string, p *sensitivity.Profile, share Share) (ProfileRow, JobType, error) {
	gt := p.GPU.Type
	if gt == "" {
		return ProfileRow{}, JobType{}, fmt.Errorf("%s: gpu.type: empty (gpu.mode %q): the profile does not say which GPU type it measured (profiles record it since gpu.type was added; an emulated run records --emulate-gpu NAME, a fixed --emulate-step wait names no type)", path, p.GPU.Mode)
	}
	if p.Job.Name == "" {
		return ProfileRow{}, JobType{}, fmt.Errorf("%s: job.name: empty: a throughput row needs the job's name", path)
	}
	c, m := share(gt)
	v, err := sensitivity.AtFairShare(p, c, m)
	if err != nil {
		return ProfileRow{}, JobType{}, fmt.Errorf("%s: %w", path, err)
	}
	jt := JobType{Model: sensitivity.GavelJobType(p), ScaleFactor: v.GPUs}
	row := ProfileRow{File: path, JobType: jt.String(), GPUType: gt, Emulated: p.GPU.Mode == sensitivity.GPUModeEmulated,
		CPUsPerGPU: c, MemBytesPerGPU: m, Clamped: v.FairClamped, SamplesPerS: v.FairSamplesPerS,
		StepsPerS: v.FairSamplesPerS / float64(v.Batch*v.GPUs)}
	return row, jt, nil
}

// Merge adds o's isolated and co-located entries to t. An entry both give
// is an error naming the job type and the GPU type (one source per row
// entry: a profile never silently replaces the file's figure).
func (t *Throughputs) Merge(o *Throughputs, what string) error {
	for _, wt := range sortedKeys(o.Isolated) {
		if t.Isolated[wt] == nil {
			t.Isolated[wt] = map[JobType]float64{}
			t.Colocated[wt] = map[JobType]map[JobType][2]float64{}
		}
		jts := make([]JobType, 0, len(o.Isolated[wt]))
		for jt := range o.Isolated[wt] {
			jts = append(jts, jt)
		}
		sort.Slice(jts, func(a, b int) bool { return jts[a].String() < jts[b].String() })
		for _, jt := range jts {
			v := o.Isolated[wt][jt]
			if _, dup := t.Isolated[wt][jt]; dup {
				return fmt.Errorf("%s: %s on %q is in the throughputs file too (give each job type and GPU type once)", what, jt, wt)
			}
			t.Isolated[wt][jt] = v
		}
		for jt, col := range o.Colocated[wt] {
			t.Colocated[wt][jt] = col
		}
	}
	return nil
}
