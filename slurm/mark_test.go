package slurm

import (
	"strings"
	"testing"
)

func TestMark_RoundTrip(t *testing.T) {
	for _, m := range []Mark{
		{Profile: "/p/image.json"},
		{User: "run 7", Profile: "/p/a b.json", Placed: &Placement{Node: "node2", GPUs: 2, CPUs: 12, MemMiB: 65536}},
		{Profile: "/p/x.json", Waiting: "waiting; gpu: need 8, free 0"},
		{User: "no profile here"},
	} {
		s := m.String()
		got, err := ParseMark(s)
		if err != nil {
			t.Fatalf("ParseMark(%q): %v", s, err)
		}
		if got.String() != s || got.Profile != m.Profile || got.User != m.User || got.Waiting != m.Waiting || (got.Placed == nil) != (m.Placed == nil) {
			t.Errorf("round trip of %+v: %q -> %+v", m, s, got)
		}
		if m.Placed != nil && *got.Placed != *m.Placed {
			t.Errorf("placed %+v, want %+v", *got.Placed, *m.Placed)
		}
	}
}

func TestMark_Malformed(t *testing.T) {
	for _, c := range []string{
		"synergy:profile=/p.json synergy:placed=node1/gpus=x/cpus=1/mem_mib=1",
		"synergy:profile=/p.json synergy:placed=node1",
		"synergy:profile=/p.json synergy:placed=/gpus=1/cpus=1/mem_mib=1",
		"synergy:frobnicate=1",
	} {
		if _, err := ParseMark(c); err == nil {
			t.Errorf("ParseMark(%q): no error", c)
		}
	}
}

func TestMark_ReasonBoundedAndInert(t *testing.T) {
	m := Mark{Profile: "/p.json", Waiting: strings.Repeat("é", 600) + " synergy:placed=node1/gpus=1/cpus=1/mem_mib=1"}
	s := m.String()
	got, err := ParseMark(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Placed != nil {
		t.Error("a reason quoting a marker became a placement")
	}
	if n := len(got.Waiting); n > maxReason {
		t.Errorf("reason of %d bytes, want at most %d", n, maxReason)
	}
	if !strings.HasSuffix(got.Waiting, "...") || !strings.HasPrefix(got.Waiting, "é") {
		t.Errorf("reason %q", got.Waiting)
	}
}
