package sensitivitytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Case is one malformed profile: a named mutation of a good profile, and
// the field (a JSON path, as the reader names it) its refusal must name.
type Case struct {
	Name  string
	Field string
	JSON  []byte
}

// Malformed returns the malformed profiles made from good (Good's JSON):
// each breaks one rule of sensitivity.Profile.Validate or of the strict
// decoder, and nothing else.
func Malformed(good []byte) []Case {
	p, err := sensitivity.Decode(bytes.NewReader(good))
	if err != nil {
		panic("sensitivitytest: the good profile does not decode: " + err.Error())
	}
	// indices of cells the mutations address, by role
	idx := func(cpus float64, mem int64) int {
		for i, c := range p.Cells {
			if c.CPUs == cpus && c.MemLimitBytes == mem {
				return i
			}
		}
		panic(fmt.Sprintf("sensitivitytest: no cell at cpus=%g mem=%d", cpus, mem))
	}
	meas := idx(0.5, 0)         // measured, phase cpu, unlimited
	memCell := idx(0.5, 64*mib) // measured, phase memory, fetch-bound
	pred := idx(2, 64*mib)      // predicted
	valid := idx(1, 128*mib)    // measured for validation
	cell := func(i int, field string) string { return fmt.Sprintf("cells[%d].%s", i, field) }

	var out []Case
	add := func(name, field string, mutate func(d *doc)) {
		d := parse(good)
		mutate(d)
		out = append(out, Case{Name: name, Field: field, JSON: d.bytes()})
	}

	// the version and the decoder
	add("schema version missing", "schema_version", func(d *doc) { d.del("schema_version") })
	add("schema version from the future", "schema_version", func(d *doc) { d.set("schema_version", 2) })
	add("schema version zero", "schema_version", func(d *doc) { d.set("schema_version", 0) })
	add("schema version negative", "schema_version", func(d *doc) { d.set("schema_version", -1) })
	add("unknown top-level key", "stratgy", func(d *doc) { d.set("stratgy", "axes") })
	add("unknown cell key", "sample_per_s", func(d *doc) { d.set(cell(meas, "sample_per_s"), 1) })
	add("cells not an array", "cells", func(d *doc) { d.set("cells", map[string]any{}) })
	add("rate overflowing float64", "samples_per_s", func(d *doc) { d.set(cell(meas, "samples_per_s"), json.Number("1e309")) })
	add("GPUs overflowing int", "gpus", func(d *doc) { d.set("job.gpus", json.Number("1e30")) })

	// job
	add("batch zero", "job.batch", func(d *doc) { d.set("job.batch", 0) })
	add("batch negative", "job.batch", func(d *doc) { d.set("job.batch", -16) })
	add("batch absurd", "job.batch", func(d *doc) { d.set("job.batch", 1_000_000_000) })
	add("10^12 GPUs", "job.gpus", func(d *doc) { d.set("job.gpus", 1_000_000_000_000) })
	add("GPUs negative", "job.gpus", func(d *doc) { d.set("job.gpus", -1) })
	add("max iterations negative", "job.max_iterations", func(d *doc) { d.set("job.max_iterations", -5) })
	add("job name with a newline", "job.name", func(d *doc) { d.set("job.name", "synthtrain\n--cpus-per-gpu=64") })

	// host
	add("DRAM beyond any machine", "host.dram_bytes", func(d *doc) { d.set("host.dram_bytes", int64(1)<<62) })
	add("DRAM unknown with an unlimited column", "host.dram_bytes", func(d *doc) { d.set("host.dram_bytes", 0) })
	add("host with a million CPUs", "host.logical_cpus", func(d *doc) { d.set("host.logical_cpus", 1_000_000) })
	add("axis needs more cores than the host", "axes.cpus[2]", func(d *doc) { d.set("host.logical_cpus", 1) })
	add("cold read negative", "host.cold_read_mb_per_s", func(d *doc) { d.set("host.cold_read_mb_per_s", -3) })
	add("dataset bytes in no files", "host.dataset_files", func(d *doc) { d.set("host.dataset_files", 0) })
	add("cgroup mode unknown", "host.cgroup_mode", func(d *doc) { d.set("host.cgroup_mode", "v3") })

	// gpu
	add("GPU mode unknown", "gpu.mode", func(d *doc) { d.set("gpu.mode", "cuda") })
	add("10^12 GPUs on the host", "gpu.count", func(d *doc) { d.set("gpu.count", 1_000_000_000_000) })

	// axes
	add("CPU axis empty", "axes.cpus", func(d *doc) { d.set("axes.cpus", []any{}) })
	add("memory axis empty", "axes.mem_limit_bytes", func(d *doc) { d.set("axes.mem_limit_bytes", []any{}) })
	add("CPU axis descending", "axes.cpus[1]", func(d *doc) { d.set("axes.cpus", []any{1, 0.5, 2}) })
	add("CPU axis repeats a value", "axes.cpus[2]", func(d *doc) { d.set("axes.cpus", []any{0.5, 1, 1, 2}) })
	add("10^18 CPUs", "axes.cpus[2]", func(d *doc) { d.set("axes.cpus[2]", json.Number("1e18")) })
	add("CPUs below a CFS quota", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", 0.001) })
	add("CPUs zero", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", 0) })
	add("CPUs negative", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", -0.5) })
	add("unlimited not last", "axes.mem_limit_bytes[2]", func(d *doc) {
		d.set("axes.mem_limit_bytes", []any{64 * mib, 0, 128 * mib, 384 * mib})
	})
	add("memory limit negative", "axes.mem_limit_bytes[0]", func(d *doc) { d.set("axes.mem_limit_bytes[0]", -1) })
	add("memory limit of 1 KiB", "axes.mem_limit_bytes[0]", func(d *doc) { d.set("axes.mem_limit_bytes[0]", 1024) })
	add("memory limit beyond any machine", "axes.mem_limit_bytes[2]", func(d *doc) { d.set("axes.mem_limit_bytes[2]", int64(1)<<55) })
	add("memory limit above the host's DRAM", "axes.mem_limit_bytes[3]", func(d *doc) {
		d.set("axes.mem_limit_bytes", []any{64 * mib, 128 * mib, 384 * mib, int64(32) << 30, 0})
	})

	// cells
	add("cell CPUs off the axis", cell(meas, "cpus"), func(d *doc) { d.set(cell(meas, "cpus"), 3) })
	add("cell memory off the axis", cell(memCell, "mem_limit_bytes"), func(d *doc) { d.set(cell(memCell, "mem_limit_bytes"), 96*mib) })
	add("duplicate cell", fmt.Sprintf("cells[%d]", len(p.Cells)), func(d *doc) { d.append("cells", d.get(cell(meas, ""))) })
	add("1e308 samples/s", cell(meas, "samples_per_s"), func(d *doc) { d.set(cell(meas, "samples_per_s"), json.Number("1e308")) })
	add("samples/s negative", cell(meas, "samples_per_s"), func(d *doc) { d.set(cell(meas, "samples_per_s"), -388.8) })
	add("interval negative", cell(meas, "samples_per_s_ci95"), func(d *doc) { d.set(cell(meas, "samples_per_s_ci95"), -1) })
	add("predicted rate absurd", cell(pred, "samples_per_s"), func(d *doc) { d.set(cell(pred, "samples_per_s"), json.Number("1e12")) })
	add("failed point claiming a rate", cell(memCell, "samples_per_s"), func(d *doc) {
		d.set(cell(memCell, "failure"), map[string]any{"class": "oom_killed", "exit_code": -1, "message": "OOM-killed"})
		d.del(cell(memCell, "stall"))
	})
	add("failed point claiming an interval", cell(memCell, "samples_per_s_ci95"), func(d *doc) {
		d.set(cell(memCell, "failure"), map[string]any{"class": "oom_killed", "exit_code": -1, "message": "OOM-killed"})
		d.del(cell(memCell, "stall"))
		d.set(cell(memCell, "samples_per_s"), 0)
	})
	add("failure class unknown", cell(memCell, "failure.class"), func(d *doc) {
		d.set(cell(memCell, "failure"), map[string]any{"class": "exploded", "exit_code": 1, "message": ""})
		d.del(cell(memCell, "stall"))
		d.set(cell(memCell, "samples_per_s"), 0)
		d.set(cell(memCell, "samples_per_s_ci95"), 0)
	})
	add("failure on a predicted cell", cell(pred, "failure"), func(d *doc) {
		d.set(cell(pred, "failure"), map[string]any{"class": "crashed", "exit_code": 1, "message": "x"})
	})
	add("phase on a predicted cell", cell(pred, "phase"), func(d *doc) { d.set(cell(pred, "phase"), "memory") })
	add("stats on a predicted cell", cell(pred, "stats"), func(d *doc) { d.set(cell(pred, "stats"), d.get(cell(meas, "stats"))) })
	add("stall on a predicted cell", cell(pred, "stall"), func(d *doc) { d.set(cell(pred, "stall"), d.get(cell(meas, "stall"))) })
	add("measured cell without a phase", cell(meas, "phase"), func(d *doc) { d.del(cell(meas, "phase")) })
	add("phase unknown", cell(meas, "phase"), func(d *doc) { d.set(cell(meas, "phase"), "warmup") })
	add("cpu phase under a memory limit", cell(memCell, "phase"), func(d *doc) { d.set(cell(memCell, "phase"), "cpu") })
	add("measured cell without a rate or a failure", cell(meas, "samples_per_s"), func(d *doc) {
		d.set(cell(meas, "samples_per_s"), 0)
		d.set(cell(meas, "samples_per_s_ci95"), 0)
	})
	add("measured cell without its metrics source", cell(meas, "stats.metrics_source"), func(d *doc) { d.del(cell(meas, "stats.metrics_source")) })
	add("measured cell without its stop reason", cell(meas, "stats.stop_reason"), func(d *doc) { d.del(cell(meas, "stats.stop_reason")) })
	add("measured cell without iterations", cell(meas, "stats.iterations"), func(d *doc) {
		d.set(cell(meas, "stats.iterations"), 0)
		d.set(cell(meas, "stats.warmup_iterations"), 0)
	})
	add("more warm-up than iterations", cell(meas, "stats.warmup_iterations"), func(d *doc) { d.set(cell(meas, "stats.warmup_iterations"), 1000) })
	add("data wait above 1", cell(meas, "stats.data_wait_fraction"), func(d *doc) { d.set(cell(meas, "stats.data_wait_fraction"), 1.5) })
	add("p95 below p50", cell(meas, "stats.iter_seconds_p95"), func(d *doc) { d.set(cell(meas, "stats.iter_seconds_p95"), 0.001) })
	add("peak memory beyond any machine", cell(meas, "stats.mem_peak_bytes"), func(d *doc) { d.set(cell(meas, "stats.mem_peak_bytes"), int64(1)<<60) })
	add("timeline outside any timeline directory", cell(meas, "stats.timeline"), func(d *doc) { d.set(cell(meas, "stats.timeline"), "/etc/shadow") })
	add("timeline escaping with ..", cell(meas, "stats.timeline"), func(d *doc) {
		d.set(cell(meas, "stats.timeline"), "demo/profile.timeline/../../../etc/cpus0.5-x.samples.jsonl")
	})
	add("timeline of another point", cell(meas, "stats.timeline"), func(d *doc) {
		d.set(cell(meas, "stats.timeline"), "demo/profile.timeline/cpus2-memunlimited.samples.jsonl")
	})
	add("timeline with a control character", cell(meas, "stats.timeline"), func(d *doc) {
		d.set(cell(meas, "stats.timeline"), "demo/profile.timeline/cpus0.5-mem\x00unlimited.samples.jsonl")
	})
	add("stalls adding up past the iteration", cell(memCell, "stall.fetch_stall_fraction"), func(d *doc) {
		d.set(cell(memCell, "stall.prep_stall_fraction"), 0.6)
		d.set(cell(memCell, "stall.fetch_stall_fraction"), 0.6)
	})
	add("stall bound unknown", cell(memCell, "stall.bound"), func(d *doc) { d.set(cell(memCell, "stall.bound"), "gpu") })
	firstPred := 0
	for p.Cells[firstPred].Measured {
		firstPred++
	}
	add("predictions with nothing measured", cell(firstPred, "measured"), func(d *doc) {
		for i, c := range p.Cells {
			if c.Measured {
				d.set(cell(i, "failure"), map[string]any{"class": "crashed", "exit_code": 3, "message": "x"})
				d.set(cell(i, "samples_per_s"), 0)
				d.set(cell(i, "samples_per_s_ci95"), 0)
				d.del(cell(i, "stall"))
			}
		}
	})

	// step_only
	add("step-only failure claiming a rate", "step_only.samples_per_s", func(d *doc) {
		d.set("step_only.failure", map[string]any{"class": "crashed", "exit_code": 2, "message": "no --synthetic-data"})
	})
	add("step-only at zero CPUs", "step_only.cpus", func(d *doc) { d.set("step_only.cpus", 0) })

	// fit and validation
	add("fit model unknown", "fit.model", func(d *doc) { d.set("fit.model", "linear/v0") })
	add("fit on more CPU points than measured", "fit.params.cpu_points", func(d *doc) { d.set("fit.params.cpu_points", 99) })
	add("fit parameter negative", "fit.params.g_samples_per_s", func(d *doc) { d.set("fit.params.g_samples_per_s", -1) })
	add("validation over more cells than measured for it", "validation.cells", func(d *doc) { d.set("validation.cells", 5) })
	add("validation's worst cell not a validate cell", "validation.worst_cpus", func(d *doc) { d.set("validation.worst_cpus", 2) })
	add("validation MAPE negative", "validation.mape_pct", func(d *doc) { d.set("validation.mape_pct", -1) })
	add("validation without validate cells", "validation.cells", func(d *doc) { d.set(cell(valid, "phase"), "grid") })

	// cost and samplers
	add("cost negative", "cost.wall_seconds", func(d *doc) { d.set("cost.wall_seconds", -1) })
	add("sampler without a name", "samplers[0].name", func(d *doc) { d.set("samplers[0].name", "") })
	return out
}

// doc is a profile as generic JSON, numbers kept as written.
type doc struct{ root any }

func parse(data []byte) *doc {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	return &doc{v}
}

func (d *doc) bytes() []byte {
	b, err := json.MarshalIndent(d.root, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// steps splits "cells[3].stats.timeline" into "cells", 3, "stats",
// "timeline" (an int is an array index).
func steps(path string) []any {
	var out []any
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for rest != "" {
			n, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if err != nil {
				panic("sensitivitytest: bad path " + path)
			}
			out = append(out, i)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// walk returns the container holding the last step of path.
func (d *doc) walk(path string) (parent any, last any) {
	s := steps(path)
	cur := d.root
	for _, k := range s[:len(s)-1] {
		switch k := k.(type) {
		case string:
			m := cur.(map[string]any)
			if _, ok := m[k]; !ok {
				m[k] = map[string]any{}
			}
			cur = m[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur, s[len(s)-1]
}

func (d *doc) get(path string) any {
	if path == "" {
		return d.root
	}
	parent, last := d.walk(strings.TrimSuffix(path, "."))
	switch k := last.(type) {
	case string:
		return clone(parent.(map[string]any)[k])
	default:
		return clone(parent.([]any)[k.(int)])
	}
}

func (d *doc) set(path string, v any) {
	parent, last := d.walk(path)
	switch k := last.(type) {
	case string:
		parent.(map[string]any)[k] = v
	default:
		parent.([]any)[k.(int)] = v
	}
}

func (d *doc) del(path string) {
	parent, last := d.walk(path)
	delete(parent.(map[string]any), last.(string))
}

func (d *doc) append(path string, v any) {
	parent, last := d.walk(path)
	m := parent.(map[string]any)
	m[last.(string)] = append(m[last.(string)].([]any), v)
}

// clone deep-copies generic JSON.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = clone(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = clone(x)
		}
		return s
	}
	return v
}
