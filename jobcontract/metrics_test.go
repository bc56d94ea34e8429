package jobcontract

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseIteration_Errors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}`, ""},
		{`{"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}`, `missing key "iter"`},
		{`{"iter":1,"samples":-4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}`, "samples"},
		{`{"iter":1,"samples":4,"data_wait_s":-1,"step_s":0.1,"ts":1.7e9}`, "data_wait_s"},
		{`{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":0}`, "ts"},
		{`{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9,"epoch":-1}`, "epoch"},
		{`{"iter":"x","samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}`, "iter"},
		{`[1,2]`, "not a JSON object"},
	} {
		_, err := ParseIteration([]byte(tc.line))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.line, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.line, err, tc.want)
		}
	}
}

func FuzzParseIteration(f *testing.F) {
	f.Add([]byte(`{"iter":1,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9,"epoch":0}`))
	f.Add([]byte(`{"iter":1e99}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		it, err := ParseIteration(line)
		if err != nil {
			return
		}
		if it.Iter < 0 || it.Samples < 0 || badDuration(it.DataWaitS) || badDuration(it.StepS) || !(it.TS > 0) {
			t.Fatalf("accepted an invalid iteration %+v from %q", it, line)
		}
	})
}

func TestIteration_RoundTrip(t *testing.T) {
	epoch, intended := 1, 0.05
	in := Iteration{Iter: 12, Samples: 32, DataWaitS: 0.0123, StepS: 0.05, TS: 1732300000.123456, Epoch: &epoch, StepIntendedS: &intended, Emulated: true}
	line := AppendIteration(nil, in)
	want := `{"iter":12,"samples":32,"data_wait_s":0.012300,"step_s":0.050000,"ts":1732300000.123456,"epoch":1,"step_intended_s":0.050000,"emulated":true}` + "\n"
	if string(line) != want {
		t.Errorf("line\n got %s\nwant %s", line, want)
	}
	out, err := ParseIteration(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	if _, err := ParseIteration([]byte(`{"iter":1,"samples":2,"data_wait_s":0,"step_s":0}`)); err == nil || !strings.Contains(err.Error(), `"ts"`) {
		t.Errorf("missing ts: %v", err)
	}
	nan := AppendIteration(nil, Iteration{StepS: math.NaN()})
	if !json.Valid(bytes.TrimSpace(nan)) {
		t.Errorf("NaN rendered as invalid JSON: %s", nan)
	}
}

// FuzzIteration_RoundTrip: every line AppendIteration writes decodes back to
// the same iteration, to the 1 µs the stream carries.
func FuzzIteration_RoundTrip(f *testing.F) {
	f.Add(0, 32, 0.0123, 0.05, 1732300000.123456, 0, 0.05, true)
	f.Add(1<<40, 0, 0.0, 1e-9, 0.0, 7, 0.0, false)
	f.Add(-1, -5, 1e300, math.Inf(1), math.NaN(), -2, -0.5, true)
	f.Fuzz(func(t *testing.T, iter, samples int, wait, step, ts float64, epoch int, intended float64, emulated bool) {
		in := Iteration{Iter: iter, Samples: samples, DataWaitS: wait, StepS: step, TS: ts, Epoch: &epoch, StepIntendedS: &intended, Emulated: emulated}
		line := AppendIteration(nil, in)
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not exactly one line: %q", line)
		}
		out, err := DecodeIteration(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if out.Iter != iter || out.Samples != samples || out.Epoch == nil || *out.Epoch != epoch || out.Emulated != emulated {
			t.Errorf("ints/bool: %+v from %+v", out, in)
		}
		for _, p := range [][2]float64{{wait, out.DataWaitS}, {step, out.StepS}, {ts, out.TS}, {intended, *out.StepIntendedS}} {
			want := p[0]
			if math.IsNaN(want) || math.IsInf(want, 0) {
				want = 0
			}
			if d := math.Abs(p[1] - want); d > 5.0001e-7 && d > 1e-12*math.Abs(want) {
				t.Errorf("float %v came back as %v", p[0], p[1])
			}
		}
	})
}
