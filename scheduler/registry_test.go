package scheduler

import (
	"strings"
	"testing"
)

// TestRegistry_EachNameOnce: every registered strategy and policy has a
// distinct name, is found by it, and has one line of help.
func TestRegistry_EachNameOnce(t *testing.T) {
	for _, reg := range []struct {
		kind  string
		names []string
		help  string
		find  func(string) (named, error)
	}{
		{"strategy", StrategyNames(), StrategyHelp(), func(n string) (named, error) { return NewStrategy(n) }},
		{"policy", PolicyNames(), PolicyHelp(), func(n string) (named, error) { return NewPolicy(n) }},
	} {
		lines := strings.Split(strings.TrimSuffix(reg.help, "\n"), "\n")
		if len(lines) != len(reg.names) {
			t.Errorf("%s: %d help lines for %d names", reg.kind, len(lines), len(reg.names))
		}
		seen := map[string]bool{}
		for i, n := range reg.names {
			if seen[n] {
				t.Errorf("%s %q registered twice", reg.kind, n)
			}
			seen[n] = true
			if v, err := reg.find(n); err != nil || v.Name() != n {
				t.Errorf("%s %q: %v, %v", reg.kind, n, v, err)
			}
			if i < len(lines) && !strings.HasPrefix(lines[i], n+": ") {
				t.Errorf("%s help line %d = %q, want it to start %q", reg.kind, i, lines[i], n+": ")
			}
		}
		if _, err := reg.find("nope"); err == nil || err.Error() != "unknown "+reg.kind+" \"nope\" (have "+strings.Join(reg.names, ", ")+")" {
			t.Errorf("%s: unknown name: %v", reg.kind, err)
		}
	}
}
