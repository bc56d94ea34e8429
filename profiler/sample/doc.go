// Package sample owns the sampling loop of a profiling point: one ticker
// (default 10 Hz, DefaultInterval) drives every Sampler in turn, each Sample
// call fills named values into one timestamped Record, and the Record goes to
// a Sink. Series names carry their units ("gpu0_util_pct", "host_cpu_pct",
// "cg_cpu_usage_s", "cg_mem_cache_bytes").
//
// The rules follow node_exporter's collectors: a failing sampler never hides
// the others (its error is recorded and the tick goes on, a panic included);
// "no data" is not an error (a sampler that has nothing this tick sets
// nothing and returns nil); and every sampler's health — samples taken,
// errors (deduplicated with a count, at most MaxDistinctErrors messages kept)
// and the time spent inside Sample — is kept in a Health, whose Name,
// Samples and Errors map one to one onto sensitivity.SamplerRun. Run stops
// when its context is done.
//
// Sinks: JSONLWriter writes one flat JSON object per Record (a timeline
// file, keys sorted, so two equal runs give equal bytes); Aggregator keeps
// count, first, last, min, max and mean per series; Tee fans a Record out to
// several sinks.
//
// The package uses the standard library only; the NVML, host and cgroup
// samplers live in profiler/nvml, profiler/host and profiler/cgstat.
package sample
