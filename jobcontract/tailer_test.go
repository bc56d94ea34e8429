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
