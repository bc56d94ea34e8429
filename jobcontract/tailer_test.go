package jobcontract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailer_PartialLinesAndBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	tl := NewTailer(path)
	if its, err := tl.Poll(); err != nil || len(its) != 0 {
		t.Fatalf("missing file: %v %v", its, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"iter":0,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}` + "\n" + `{"iter":1,"samp`)
	its, _ := tl.Poll()
	if len(its) != 1 || its[0].Iter != 0 {
		t.Fatalf("first poll = %+v, want iteration 0 only (the second line is partial)", its)
	}
	f.WriteString(`les":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}` + "\nnot json\n")
	its, _ = tl.Poll()
	if len(its) != 1 || its[0].Iter != 1 {
		t.Fatalf("second poll = %+v, want the completed iteration 1", its)
	}
	if tl.Bad != 1 || !strings.Contains(tl.Errors[0], "metrics line 3") {
		t.Errorf("bad = %d, errors = %v; want line 3 reported", tl.Bad, tl.Errors)
	}
}

func TestTailer_Broken(t *testing.T) {
	good := `{"iter":0,"samples":4,"data_wait_s":0,"step_s":0.1,"ts":1.7e9}` + "\n"
	long := strings.Repeat("x", 500)
	for _, tc := range []struct {
		name, stream string
		want         string // substring of Broken; "" means not broken
	}{
		{"nothing written", "", ""},
		{"only white space", "\n  \n", ""},
		{"garbage lines", "step 1 loss 0.5\nstep 2 loss 0.4\n", `none of the 2 metrics lines could be read; first bad line 1: "step 1 loss 0.5" (not a JSON object`},
		{"a key missing", `{"iter":0,"samples":4}` + "\n", `missing key "data_wait_s"`},
		{"no newline at all", "garbage without newline", `no complete line (23 bytes without a newline, starting "garbage without newline")`},
		{"long bad line truncated", long + "\n", `"` + strings.Repeat("x", MaxQuotedLine) + `"…`},
		{"one bad line among good", good + "oops\n" + good, ""},
		{"more bad than good", good + "oops\noops\n", `2 of the 3 metrics lines could not be read; first bad line 2: "oops"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.jsonl")
			if err := os.WriteFile(path, []byte(tc.stream), 0o644); err != nil {
				t.Fatal(err)
			}
			tl := NewTailer(path)
			its, err := tl.Poll()
			if err != nil {
				t.Fatal(err)
			}
			got := tl.Broken(len(its))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("Broken = %q, want it to contain %q", got, tc.want)
			}
			if tc.want != "" && strings.Contains(got, strings.Repeat("x", MaxQuotedLine+1)) {
				t.Errorf("Broken quotes more than %d bytes: %q", MaxQuotedLine, got)
			}
		})
	}
}
