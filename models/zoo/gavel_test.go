package zoo

import (
	"strings"
	"testing"
)

// Gavel's job table: 26 templates, 5 ResNet-18 + 4 ResNet-50 + 5
// Transformer + 5 LM + 5 Recommendation + A3C + CycleGAN, each named by
// its job type, the batch in the name where Gavel puts one.
func TestGavelTemplates_Table(t *testing.T) {
	ts := GavelTemplates()
	if len(ts) != 26 {
		t.Fatalf("%d templates, want Gavel's 26", len(ts))
	}
	count := map[string]int{}
	seen := map[string]bool{}
	for _, g := range ts {
		count[g.Model]++
		if seen[g.Name] {
			t.Errorf("%q twice", g.Name)
		}
		seen[g.Name] = true
		if g.Batch > 0 && !strings.HasSuffix(g.Name, ")") {
			t.Errorf("%q: batch %d not in the name", g.Name, g.Batch)
		}
		if g.Distributed != (g.Model != "Recommendation" && g.Model != "A3C" && g.Model != "CycleGAN") {
			t.Errorf("%q: distributed = %v, against Gavel's table", g.Name, g.Distributed)
		}
	}
	want := map[string]int{"ResNet-18": 5, "ResNet-50": 4, "Transformer": 5, "LM": 5, "Recommendation": 5, "A3C": 1, "CycleGAN": 1}
	for m, n := range want {
		if count[m] != n {
			t.Errorf("%s: %d templates, want %d", m, count[m], n)
		}
	}
	if seen["ResNet-50 (batch size 256)"] {
		t.Error("ResNet-50 at batch 256 is not in Gavel's table, but is here")
	}
	ts[0].Name = "changed"
	if GavelTemplates()[0].Name == "changed" {
		t.Error("GavelTemplates shares its values between calls")
	}
}
