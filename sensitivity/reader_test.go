package sensitivity_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// goodJSON is sensitivitytest.Good as its profile JSON.
func goodJSON(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := sensitivitytest.Good("demo").Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// refusedField returns the field err names: a *sensitivity.FieldError's
// Field, else the whole message (the strict decoder's errors name the
// field in their text).
func refusedField(err error) string {
	var fe *sensitivity.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return err.Error()
}

// TestDecode_RefusesMalformedProfiles: every malformed profile of the corpus
// (a one-rule mutation of a good, demo-shaped profile) is refused, and the
// refusal names the field the mutation broke, with its value.
func TestDecode_RefusesMalformedProfiles(t *testing.T) {
	good := goodJSON(t)
	if _, err := sensitivity.Decode(bytes.NewReader(good)); err != nil {
		t.Fatalf("the good profile is refused: %v", err)
	}
	cases := sensitivitytest.Malformed(good)
	if len(cases) < 30 {
		t.Fatalf("%d malformed cases, want at least 30", len(cases))
	}
	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.Name] {
			t.Fatalf("case %q twice", tc.Name)
		}
		names[tc.Name] = true
		t.Run(tc.Name, func(t *testing.T) {
			if bytes.Equal(tc.JSON, good) {
				t.Fatal("the mutation changed nothing")
			}
			_, err := sensitivity.Decode(bytes.NewReader(tc.JSON))
			if err == nil {
				t.Fatalf("accepted; want a refusal naming %s", tc.Field)
			}
			var fe *sensitivity.FieldError
			if errors.As(err, &fe) {
				if fe.Field != tc.Field {
					t.Fatalf("refusal names %q, want %q: %v", fe.Field, tc.Field, err)
				}
				if !strings.HasPrefix(err.Error(), tc.Field+": ") {
					t.Errorf("message %q does not start with the field", err)
				}
				if fe.Value == "" && !strings.Contains(fe.Problem, "missing") && !strings.Contains(fe.Problem, "duplicates") &&
					!strings.Contains(fe.Problem, "set on a") {
					t.Errorf("refusal does not show the offending value: %v", err)
				}
				return
			}
			if !strings.Contains(err.Error(), tc.Field) {
				t.Fatalf("refusal %q does not name %q", err, tc.Field)
			}
		})
	}
}

// TestValidate_BoundsAndValuesInTheMessage pins a few messages whole: the
// field, the value and the reason, so a user can fix the file.
func TestValidate_BoundsAndValuesInTheMessage(t *testing.T) {
	good := goodJSON(t)
	want := map[string]string{
		"10^18 CPUs":                     "axes.cpus[2]: 1e+18 is above 8192: more CPUs than Linux supports",
		"CPUs below a CFS quota":         "axes.cpus[0]: 0.001 is below 0.01",
		"10^12 GPUs":                     "job.gpus: 1000000000000 is above 1024: more GPUs than any job synergy profiles on one host",
		"1e308 samples/s":                "cells[3].samples_per_s: 1e+308 is above 1e+09: faster than any training job's input (the cell at cpus=0.5 mem_limit_bytes=0)",
		"cell CPUs off the axis":         "cells[3].cpus: 3 is not a value of axes.cpus [0.5, 1, 2] (the cell at cpus=3 mem_limit_bytes=0)",
		"CPU axis empty":                 "axes.cpus: [] is empty: a profile needs at least one CPU count",
		"failed point claiming a rate":   `cells[0].samples_per_s: 27.8 on a failed point (failure.class "oom_killed"): a failed point measured no throughput, so it records 0 (the cell at cpus=0.5 mem_limit_bytes=67108864)`,
		"timeline escaping with ..":      `cells[3].stats.timeline: "demo/profile.timeline/../../../etc/cpus0.5-x.samples.jsonl" is not a clean path (it would read as "../etc/cpus0.5-x.samples.jsonl"): the profiler records clean paths (the cell at cpus=0.5 mem_limit_bytes=0)`,
		"schema version from the future": "schema_version: 2 is newer than this tool reads (1); upgrade synergy",
	}
	seen := 0
	for _, tc := range sensitivitytest.Malformed(good) {
		w, ok := want[tc.Name]
		if !ok {
			continue
		}
		seen++
		_, err := sensitivity.Decode(bytes.NewReader(tc.JSON))
		if err == nil || err.Error() != w {
			t.Errorf("%s: error\n %v\nwant\n %s", tc.Name, err, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d pinned cases found in the corpus", seen, len(want))
	}
}

// The demo-shaped profiles are valid, complete, and read back unchanged.
func TestDemoProfiles_ValidAndRoundTrip(t *testing.T) {
	for name, p := range map[string]*sensitivity.Profile{"demo": sensitivitytest.Demo("d"), "good": sensitivitytest.Good("d")} {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !p.Complete() || p.Fit == nil {
			t.Errorf("%s: not filled", name)
		}
		var a, b bytes.Buffer
		p.Encode(&a)
		q, err := sensitivity.Decode(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q.Encode(&b)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: decode/encode round trip differs", name)
		}
	}
	if sensitivitytest.Good("d").Validation == nil || sensitivitytest.Demo("d").Validation != nil {
		t.Error("only Good has a validation block (Demo, like make demo's profile, has no validate cell)")
	}
}

// Load names the file before the field.
func TestLoad_NamesFileAndField(t *testing.T) {
	cases := sensitivitytest.Malformed(goodJSON(t))
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, cases[0].JSON, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sensitivity.Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": "+cases[0].Field) {
		t.Errorf("Load: %v, want %s: %s...", err, path, cases[0].Field)
	}
	if _, err := sensitivity.LoadFilled(path); err == nil || refusedField(errors.Unwrap(err)) == "" {
		t.Errorf("LoadFilled accepted %s", cases[0].Name)
	}
}

// FuzzProfileDecode: decoding any bytes never panics, and a profile that
// is accepted re-encodes to JSON that is accepted again and encodes the
// same, and fills and makes a matrix (checkAccepted). FuzzProfileFields
// drives the same checks through whole valid-shaped profiles.
//
// Why two targets, with small inputs: with the 12 KB indented demo and
// golden profiles and their 80 malformed variants as seeds, the fuzzer
// spent nearly all its time minimizing each new interesting input (Go's
// minimizer tries removing every span of bytes, so a 12 KB input costs
// millions of runs of the body, cut off at -fuzzminimizetime's 60 s):
// `go test -fuzz -fuzztime 10s` made 88 to 143,785 executions, most runs a
// few a second. Here the byte-level seeds are a few dozen bytes, and the
// profile-level target fuzzes a small profile's figures as typed values,
// whose minimization takes a few runs. The malformed variants are checked
// one by one by TestDecode_RefusesMalformedProfiles and its kin.
func FuzzProfileDecode(f *testing.F) {
	for _, s := range []string{
		`{"schema_version": 1}`, `{"schema_version": 99, "x": 1}`, `{}`, `{"schema_version": 1} {}`,
		`{"schema_version":1,"job":{"batch":1},"gpu":{"mode":"none"},"axes":{"cpus":[1],"mem_limit_bytes":[0]}}`,
		`{"schema_version":1,"cells":[{"cpus":1e400}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := sensitivity.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		checkAccepted(t, p)
	})
}

// FuzzProfileFields: a small profile (two CPU points with memory
// unlimited, one under a limit, a step-only run) with fuzzed figures is
// accepted by Decode exactly when Validate accepts it (the writer's check
// and the reader's agree), and an accepted one passes checkAccepted.
func FuzzProfileFields(f *testing.F) {
	f.Add(100.0, 180.0, 60.0, 2.0, 2.0, int64(64<<20), 40, uint8(0), 0.2, 400.0)
	f.Add(2e9, 180.0, 0.0, 0.0, 0.5, int64(1<<20), 0, uint8(3), 1.5, -1.0)
	f.Fuzz(func(t *testing.T, r1, r2, r3, ci, cpus2 float64, mem int64, iters int, fail uint8, wait, step float64) {
		p := smallProfile(r1, r2, r3, ci, cpus2, mem, iters, fail, wait, step)
		var b bytes.Buffer
		if err := p.Encode(&b); err != nil {
			return // NaN or ±Inf: not JSON
		}
		q, err := sensitivity.Decode(&b)
		if verr := p.Validate(); (err == nil) != (verr == nil) {
			t.Fatalf("Decode says %v, Validate says %v", err, verr)
		}
		if err == nil {
			checkAccepted(t, q)
		}
	})
}

// smallProfile is a profile of two CPU points (1 and cpus2 cores, memory
// unlimited) and one memory point (cpus2, mem), with the given figures;
// fail picks the memory point's failure (0: none).
func smallProfile(r1, r2, r3, ci, cpus2 float64, mem int64, iters int, fail uint8, wait, step float64) *sensitivity.Profile {
	stats := func(rate float64) *sensitivity.PointStats {
		return &sensitivity.PointStats{Workers: 1, Iterations: iters, MetricsSource: sensitivity.MetricsStream, StopReason: "converged",
			IterSecondsP50: 16 / rate, IterSecondsP95: 20 / rate, DataWaitFraction: wait}
	}
	p := &sensitivity.Profile{SchemaVersion: sensitivity.SchemaVersion, Job: sensitivity.JobInfo{Name: "j", Batch: 16, GPUs: 1, MaxIterations: 100},
		Host: sensitivity.HostInfo{LogicalCPUs: 4, DRAMBytes: 8 << 30, DatasetBytes: 256 << 20, DatasetFiles: 100, ColdReadMBPerS: 200},
		GPU:  sensitivity.GPUInfo{Mode: sensitivity.GPUModeNone}, Strategy: "axes",
		Axes: sensitivity.Axes{CPUs: []float64{1, cpus2}, MemLimitBytes: []int64{mem, 0}},
		Cells: []sensitivity.Cell{
			{CPUs: 1, Measured: true, Phase: sensitivity.PhaseCPU, SamplesPerS: r1, SamplesPerSCI95: ci, Stats: stats(r1)},
			{CPUs: cpus2, Measured: true, Phase: sensitivity.PhaseCPU, SamplesPerS: r2, SamplesPerSCI95: ci, Stats: stats(r2)},
			{CPUs: cpus2, MemLimitBytes: mem, Measured: true, Phase: sensitivity.PhaseMemory, SamplesPerS: r3, SamplesPerSCI95: ci, Stats: stats(r3)},
		}}
	if classes := []string{sensitivity.FailCrashed, sensitivity.FailOOMKilled, sensitivity.FailTimeout, sensitivity.FailInterrupted,
		sensitivity.FailStartFailed, sensitivity.FailNoProgress, sensitivity.FailMalformedMetrics}; fail > 0 {
		c := &p.Cells[2]
		c.Failure = &sensitivity.Failure{Class: classes[int(fail-1)%len(classes)], Message: "x"}
		c.SamplesPerS, c.SamplesPerSCI95 = 0, 0
	}
	if step != 0 {
		p.StepOnly = &sensitivity.StepOnly{CPUs: cpus2, SamplesPerS: step, SamplesPerSCI95: ci}
	}
	return p
}

// checkAccepted: an accepted profile re-encodes to JSON that is accepted
// again and encodes the same, and it can be filled and turned into a
// matrix without a panic, the filled profile still valid and its matrix
// built (every command reading it then agrees).
func checkAccepted(t *testing.T, p *sensitivity.Profile) {
	t.Helper()
	var b1, b2 bytes.Buffer
	if err := p.Encode(&b1); err != nil {
		t.Fatalf("accepted profile does not encode: %v", err)
	}
	q, err := sensitivity.Decode(bytes.NewReader(b1.Bytes()))
	if err != nil {
		t.Fatalf("accepted profile re-encodes to a refused one: %v\n%s", err, b1.Bytes())
	}
	if err := q.Encode(&b2); err != nil || !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Fatalf("re-encoding differs (%v)", err)
	}
	if !q.Complete() {
		if err := sensitivity.Fill(q); err != nil {
			return
		}
	}
	if err := q.Validate(); err != nil {
		t.Fatalf("filled profile invalid: %v", err)
	}
	if _, err := q.Matrix(); err != nil {
		t.Fatalf("valid, filled profile has no matrix: %v", err)
	}
}

// The profile-level fuzz target's seed is a valid profile, so that its
// fuzzing starts from the accepted side.
func TestSmallProfile_SeedIsValid(t *testing.T) {
	if err := smallProfile(100, 180, 60, 2, 2, 64<<20, 40, 0, 0.2, 400).Validate(); err != nil {
		t.Fatal(err)
	}
}

// Export checks a profile built in memory as the reader checks a file: the
// issue's 10^18 CPUs no longer print as --cpus-per-gpu=1000000000000000000.
func TestExport_RefusesAnInvalidProfileBuiltInMemory(t *testing.T) {
	p := sensitivitytest.Demo("demo")
	for i := range p.Cells {
		if p.Cells[i].CPUs == 2 {
			p.Cells[i].CPUs = 1e18
		}
	}
	p.Axes.CPUs[2] = 1e18
	for _, f := range sensitivity.ExportFormats() {
		var out bytes.Buffer
		err := sensitivity.Export(&out, p, f, sensitivity.ExportOptions{Server: sensitivity.DefaultServer()})
		if err == nil || refusedField(err) != "axes.cpus[2]" || out.Len() != 0 {
			t.Errorf("%s: err %v, output %q; want a refusal naming axes.cpus[2] and nothing written", f, err, out.String())
		}
	}
}
