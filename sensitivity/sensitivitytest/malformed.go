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
	c := &cases{good: good, p: p}
	c.meas = c.idx(0.5, 0)         // measured, phase cpu, unlimited
	c.memCell = c.idx(0.5, 64*mib) // measured, phase memory, fetch-bound
	c.pred = c.idx(2, 64*mib)      // predicted
	c.valid = c.idx(1, 128*mib)    // measured for validation
	c.decoderCases()
	c.jobCases()
	c.axesCases()
	c.cellCases()
	c.statCases()
	c.restCases()
	return c.out
}

// cases builds malformed profiles from one good profile; meas, memCell, pred
// and valid index the cells the mutations address, by role.
type cases struct {
	good                       []byte
	p                          *sensitivity.Profile
	meas, memCell, pred, valid int
	out                        []Case
}

// idx returns the index of the good profile's cell at cpus and mem.
func (c *cases) idx(cpus float64, mem int64) int {
	for i, cl := range c.p.Cells {
		if cl.CPUs == cpus && cl.MemLimitBytes == mem {
			return i
		}
	}
	panic(fmt.Sprintf("sensitivitytest: no cell at cpus=%g mem=%d", cpus, mem))
}

// add records the case named name: the good profile changed by mutate,
// whose refusal must name field.
func (c *cases) add(name, field string, mutate func(d *doc)) {
	d := parse(c.good)
	mutate(d)
	c.out = append(c.out, Case{Name: name, Field: field, JSON: d.bytes()})
}

// cell is the JSON path of field in cells[i].
func cell(i int, field string) string { return fmt.Sprintf("cells[%d].%s", i, field) }

// decoderCases are the cases of the schema version and the strict decoder.
func (c *cases) decoderCases() {
	// the version and the decoder
	c.add("schema version missing", "schema_version", func(d *doc) { d.del("schema_version") })
	c.add("schema version from the future", "schema_version", func(d *doc) { d.set("schema_version", 2) })
	c.add("schema version zero", "schema_version", func(d *doc) { d.set("schema_version", 0) })
	c.add("schema version negative", "schema_version", func(d *doc) { d.set("schema_version", -1) })
	c.add("unknown top-level key", "stratgy", func(d *doc) { d.set("stratgy", "axes") })
	c.add("unknown cell key", "sample_per_s", func(d *doc) { d.set(cell(c.meas, "sample_per_s"), 1) })
	c.add("cells not an array", "cells", func(d *doc) { d.set("cells", map[string]any{}) })
	c.add("rate overflowing float64", "samples_per_s", func(d *doc) { d.set(cell(c.meas, "samples_per_s"), json.Number("1e309")) })
	c.add("GPUs overflowing int", "gpus", func(d *doc) { d.set("job.gpus", json.Number("1e30")) })
}

// jobCases are the cases of the job, the host and the GPU.
func (c *cases) jobCases() {
	// job
	c.add("batch zero", "job.batch", func(d *doc) { d.set("job.batch", 0) })
	c.add("batch negative", "job.batch", func(d *doc) { d.set("job.batch", -16) })
	c.add("batch absurd", "job.batch", func(d *doc) { d.set("job.batch", 1_000_000_000) })
	c.add("10^12 GPUs", "job.gpus", func(d *doc) { d.set("job.gpus", 1_000_000_000_000) })
	c.add("GPUs negative", "job.gpus", func(d *doc) { d.set("job.gpus", -1) })
	c.add("max iterations negative", "job.max_iterations", func(d *doc) { d.set("job.max_iterations", -5) })
	c.add("job name with a newline", "job.name", func(d *doc) { d.set("job.name", "synthtrain\n--cpus-per-gpu=64") })

	// host
	c.add("DRAM beyond any machine", "host.dram_bytes", func(d *doc) { d.set("host.dram_bytes", int64(1)<<62) })
	c.add("DRAM unknown with an unlimited column", "host.dram_bytes", func(d *doc) { d.set("host.dram_bytes", 0) })
	c.add("host with a million CPUs", "host.logical_cpus", func(d *doc) { d.set("host.logical_cpus", 1_000_000) })
	c.add("axis needs more cores than the host", "axes.cpus[2]", func(d *doc) { d.set("host.logical_cpus", 1) })
	c.add("cold read negative", "host.cold_read_mb_per_s", func(d *doc) { d.set("host.cold_read_mb_per_s", -3) })
	c.add("dataset bytes in no files", "host.dataset_files", func(d *doc) { d.set("host.dataset_files", 0) })
	c.add("cgroup mode unknown", "host.cgroup_mode", func(d *doc) { d.set("host.cgroup_mode", "v3") })

	// gpu
	c.add("GPU mode unknown", "gpu.mode", func(d *doc) { d.set("gpu.mode", "cuda") })
	c.add("10^12 GPUs on the host", "gpu.count", func(d *doc) { d.set("gpu.count", 1_000_000_000_000) })
}

// axesCases are the cases of the axes.
func (c *cases) axesCases() {
	// axes
	c.add("CPU axis empty", "axes.cpus", func(d *doc) { d.set("axes.cpus", []any{}) })
	c.add("memory axis empty", "axes.mem_limit_bytes", func(d *doc) { d.set("axes.mem_limit_bytes", []any{}) })
	c.add("CPU axis descending", "axes.cpus[1]", func(d *doc) { d.set("axes.cpus", []any{1, 0.5, 2}) })
	c.add("CPU axis repeats a value", "axes.cpus[2]", func(d *doc) { d.set("axes.cpus", []any{0.5, 1, 1, 2}) })
	c.add("10^18 CPUs", "axes.cpus[2]", func(d *doc) { d.set("axes.cpus[2]", json.Number("1e18")) })
	c.add("CPUs below a CFS quota", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", 0.001) })
	c.add("CPUs zero", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", 0) })
	c.add("CPUs negative", "axes.cpus[0]", func(d *doc) { d.set("axes.cpus[0]", -0.5) })
	c.add("unlimited not last", "axes.mem_limit_bytes[2]", func(d *doc) {
		d.set("axes.mem_limit_bytes", []any{64 * mib, 0, 128 * mib, 384 * mib})
	})
	c.add("memory limit negative", "axes.mem_limit_bytes[0]", func(d *doc) { d.set("axes.mem_limit_bytes[0]", -1) })
	c.add("memory limit of 1 KiB", "axes.mem_limit_bytes[0]", func(d *doc) { d.set("axes.mem_limit_bytes[0]", 1024) })
	c.add("memory limit beyond any machine", "axes.mem_limit_bytes[2]", func(d *doc) { d.set("axes.mem_limit_bytes[2]", int64(1)<<55) })
	c.add("memory limit above the host's DRAM", "axes.mem_limit_bytes[3]", func(d *doc) {
		d.set("axes.mem_limit_bytes", []any{64 * mib, 128 * mib, 384 * mib, int64(32) << 30, 0})
	})
}

// cellCases are the cases of the cells: their place on the axes, rates, failures and phases.
func (c *cases) cellCases() {
	// cells
	c.add("cell CPUs off the axis", cell(c.meas, "cpus"), func(d *doc) { d.set(cell(c.meas, "cpus"), 3) })
	c.add("cell memory off the axis", cell(c.memCell, "mem_limit_bytes"), func(d *doc) { d.set(cell(c.memCell, "mem_limit_bytes"), 96*mib) })
	c.add("duplicate cell", fmt.Sprintf("cells[%d]", len(c.p.Cells)), func(d *doc) { d.append("cells", d.get(cell(c.meas, ""))) })
	c.add("1e308 samples/s", cell(c.meas, "samples_per_s"), func(d *doc) { d.set(cell(c.meas, "samples_per_s"), json.Number("1e308")) })
	c.add("samples/s negative", cell(c.meas, "samples_per_s"), func(d *doc) { d.set(cell(c.meas, "samples_per_s"), -388.8) })
	c.add("interval negative", cell(c.meas, "samples_per_s_ci95"), func(d *doc) { d.set(cell(c.meas, "samples_per_s_ci95"), -1) })
	c.add("predicted rate absurd", cell(c.pred, "samples_per_s"), func(d *doc) { d.set(cell(c.pred, "samples_per_s"), json.Number("1e12")) })
	c.add("failed point claiming a rate", cell(c.memCell, "samples_per_s"), func(d *doc) {
		d.set(cell(c.memCell, "failure"), map[string]any{"class": "oom_killed", "exit_code": -1, "message": "OOM-killed"})
		d.del(cell(c.memCell, "stall"))
	})
	c.add("failed point claiming an interval", cell(c.memCell, "samples_per_s_ci95"), func(d *doc) {
		d.set(cell(c.memCell, "failure"), map[string]any{"class": "oom_killed", "exit_code": -1, "message": "OOM-killed"})
		d.del(cell(c.memCell, "stall"))
		d.set(cell(c.memCell, "samples_per_s"), 0)
	})
	c.add("failure class unknown", cell(c.memCell, "failure.class"), func(d *doc) {
		d.set(cell(c.memCell, "failure"), map[string]any{"class": "exploded", "exit_code": 1, "message": ""})
		d.del(cell(c.memCell, "stall"))
		d.set(cell(c.memCell, "samples_per_s"), 0)
		d.set(cell(c.memCell, "samples_per_s_ci95"), 0)
	})
	c.add("failure on a predicted cell", cell(c.pred, "failure"), func(d *doc) {
		d.set(cell(c.pred, "failure"), map[string]any{"class": "crashed", "exit_code": 1, "message": "x"})
	})
	c.add("phase on a predicted cell", cell(c.pred, "phase"), func(d *doc) { d.set(cell(c.pred, "phase"), "memory") })
	c.add("stats on a predicted cell", cell(c.pred, "stats"), func(d *doc) { d.set(cell(c.pred, "stats"), d.get(cell(c.meas, "stats"))) })
	c.add("stall on a predicted cell", cell(c.pred, "stall"), func(d *doc) { d.set(cell(c.pred, "stall"), d.get(cell(c.meas, "stall"))) })
	c.add("measured cell without a phase", cell(c.meas, "phase"), func(d *doc) { d.del(cell(c.meas, "phase")) })
	c.add("phase unknown", cell(c.meas, "phase"), func(d *doc) { d.set(cell(c.meas, "phase"), "warmup") })
	c.add("cpu phase under a memory limit", cell(c.memCell, "phase"), func(d *doc) { d.set(cell(c.memCell, "phase"), "cpu") })
	c.add("measured cell without a rate or a failure", cell(c.meas, "samples_per_s"), func(d *doc) {
		d.set(cell(c.meas, "samples_per_s"), 0)
		d.set(cell(c.meas, "samples_per_s_ci95"), 0)
	})
}

// statCases are the cases of the measured cells' statistics, timelines and stalls.
func (c *cases) statCases() {
	c.add("measured cell without its metrics source", cell(c.meas, "stats.metrics_source"), func(d *doc) { d.del(cell(c.meas, "stats.metrics_source")) })
	c.add("measured cell without its stop reason", cell(c.meas, "stats.stop_reason"), func(d *doc) { d.del(cell(c.meas, "stats.stop_reason")) })
	c.add("measured cell without iterations", cell(c.meas, "stats.iterations"), func(d *doc) {
		d.set(cell(c.meas, "stats.iterations"), 0)
		d.set(cell(c.meas, "stats.warmup_iterations"), 0)
	})
	c.add("more warm-up than iterations", cell(c.meas, "stats.warmup_iterations"), func(d *doc) { d.set(cell(c.meas, "stats.warmup_iterations"), 1000) })
	c.add("data wait above 1", cell(c.meas, "stats.data_wait_fraction"), func(d *doc) { d.set(cell(c.meas, "stats.data_wait_fraction"), 1.5) })
	c.add("p95 below p50", cell(c.meas, "stats.iter_seconds_p95"), func(d *doc) { d.set(cell(c.meas, "stats.iter_seconds_p95"), 0.001) })
	c.add("peak memory beyond any machine", cell(c.meas, "stats.mem_peak_bytes"), func(d *doc) { d.set(cell(c.meas, "stats.mem_peak_bytes"), int64(1)<<60) })
	c.add("timeline outside any timeline directory", cell(c.meas, "stats.timeline"), func(d *doc) { d.set(cell(c.meas, "stats.timeline"), "/etc/shadow") })
	c.add("timeline escaping with ..", cell(c.meas, "stats.timeline"), func(d *doc) {
		d.set(cell(c.meas, "stats.timeline"), "demo/profile.timeline/../../../etc/cpus0.5-x.samples.jsonl")
	})
	c.add("timeline of another point", cell(c.meas, "stats.timeline"), func(d *doc) {
		d.set(cell(c.meas, "stats.timeline"), "demo/profile.timeline/cpus2-memunlimited.samples.jsonl")
	})
	c.add("timeline with a control character", cell(c.meas, "stats.timeline"), func(d *doc) {
		d.set(cell(c.meas, "stats.timeline"), "demo/profile.timeline/cpus0.5-mem\x00unlimited.samples.jsonl")
	})
	c.add("stalls adding up past the iteration", cell(c.memCell, "stall.fetch_stall_fraction"), func(d *doc) {
		d.set(cell(c.memCell, "stall.prep_stall_fraction"), 0.6)
		d.set(cell(c.memCell, "stall.fetch_stall_fraction"), 0.6)
	})
	c.add("stall bound unknown", cell(c.memCell, "stall.bound"), func(d *doc) { d.set(cell(c.memCell, "stall.bound"), "gpu") })
	firstPred := 0
	for c.p.Cells[firstPred].Measured {
		firstPred++
	}
	c.add("predictions with nothing measured", cell(firstPred, "measured"), func(d *doc) {
		for i, c := range c.p.Cells {
			if c.Measured {
				d.set(cell(i, "failure"), map[string]any{"class": "crashed", "exit_code": 3, "message": "x"})
				d.set(cell(i, "samples_per_s"), 0)
				d.set(cell(i, "samples_per_s_ci95"), 0)
				d.del(cell(i, "stall"))
			}
		}
	})
}

// restCases are the cases of the step-only run, the fit, validation, cost and samplers.
func (c *cases) restCases() {
	// step_only
	c.add("step-only failure claiming a rate", "step_only.samples_per_s", func(d *doc) {
		d.set("step_only.failure", map[string]any{"class": "crashed", "exit_code": 2, "message": "no --synthetic-data"})
	})
	c.add("step-only at zero CPUs", "step_only.cpus", func(d *doc) { d.set("step_only.cpus", 0) })

	// fit and validation
	c.add("fit model unknown", "fit.model", func(d *doc) { d.set("fit.model", "linear/v0") })
	c.add("fit on more CPU points than measured", "fit.params.cpu_points", func(d *doc) { d.set("fit.params.cpu_points", 99) })
	c.add("fit parameter negative", "fit.params.g_samples_per_s", func(d *doc) { d.set("fit.params.g_samples_per_s", -1) })
	c.add("validation over more cells than measured for it", "validation.cells", func(d *doc) { d.set("validation.cells", 5) })
	c.add("validation's worst cell not a validate cell", "validation.worst_cpus", func(d *doc) { d.set("validation.worst_cpus", 2) })
	c.add("validation MAPE negative", "validation.mape_pct", func(d *doc) { d.set("validation.mape_pct", -1) })
	c.add("validation without validate cells", "validation.cells", func(d *doc) { d.set(cell(c.valid, "phase"), "grid") })

	// gpu
	c.add("gpu type with a space", "gpu.type", func(d *doc) { d.set("gpu.type", "v 100") })
	c.add("gpu type without a GPU or emulation", "gpu.type", func(d *doc) {
		d.set("gpu.mode", "none")
		d.set("gpu.type", "v100")
	})

	// cost and samplers
	c.add("cost negative", "cost.wall_seconds", func(d *doc) { d.set("cost.wall_seconds", -1) })
	c.add("sampler without a name", "samplers[0].name", func(d *doc) { d.set("samplers[0].name", "") })
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
