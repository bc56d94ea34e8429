package jobcontract

import (
	"reflect"
	"testing"
)

func TestPoint_Args(t *testing.T) {
	p := Point{Batch: 16, Workers: 2, MaxIterations: 105, DataDir: "/data"}
	want := []string{"--batch", "16", "--workers", "2", "--max-iterations", "105", "--data", "/data"}
	if got := p.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("Args() = %q, want %q", got, want)
	}
	p.Synthetic = true
	if got := p.Args(); len(got) != len(want)+1 || got[0] != "--synthetic-data" || !reflect.DeepEqual(got[1:], want) {
		t.Errorf("synthetic Args() = %q, want --synthetic-data then %q", got, want)
	}
}
