package gavel

import (
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// Issue 40: a Gavel-mode cluster of 1e9 GPUs was taken and the run made a
// worker per GPU until the process was killed; counts near 2^63 could
// overflow the total. Each is refused naming the type and the limit.
func TestParseClusterSpec_SizeCaps(t *testing.T) {
	for spec, want := range map[string]string{
		"1000000000:1:1": `"v100": 1000000000 GPUs`,
		"a=9223372036854775807:b=9223372036854775807": `"a": 9223372036854775807 GPUs`,
		"a=600000:b=600000":                           "more than 1000000 GPUs in all",
	} {
		if _, err := ParseClusterSpec(spec, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if _, err := ParseClusterSpec("8:16:24", "9223372036854775807:1:1"); err == nil || !strings.Contains(err.Error(), "per server") {
		t.Errorf("per-server 2^63-1: %v, want it refused", err)
	}
	if _, err := ParseClusterSpec("a=1000000", ""); err != nil {
		t.Errorf("at the cap: %v", err)
	}
	big := scheduler.Cluster{Name: "big"}
	for i := range 3 {
		big.Servers = append(big.Servers, scheduler.Server{Name: "s", GPUs: 1 << 62, GPUType: "v100", CPUs: 1, MemBytes: 1})
		_ = i
	}
	if _, err := SpecFromCluster(big); err == nil || !strings.Contains(err.Error(), "gavel.MaxGPUs") {
		t.Errorf("servers summing past 2^63: %v, want the cap named", err)
	}
}

// A trace's numbers are checked before the engine does arithmetic with
// them: an arrival at 1e12 s, a scale factor of 2^40, steps past 2^53.
func TestReadTrace_NumberCaps(t *testing.T) {
	line := func(steps, sf, arrival string) string {
		return "A\tc\tw\t--n\t0\t" + steps + "\t" + sf + "\t1\t-1\t" + arrival + "\n"
	}
	for name, tc := range map[string]struct{ text, want string }{
		"arrival":      {line("100", "1", "1e12"), "arrival_time"},
		"scale factor": {line("100", "1099511627776", "0"), "scale_factor"},
		"steps":        {line("18014398509481984", "1", "0"), "total_steps"},
	} {
		if _, err := ReadTrace(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q named", name, err, tc.want)
		}
	}
	if _, err := ReadTrace(strings.NewReader(line("100", "1", "1e9"))); err != nil {
		t.Errorf("a valid line: %v", err)
	}
}
