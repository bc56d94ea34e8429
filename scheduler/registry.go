package scheduler

import (
	"fmt"
	"strings"
)

// named is what a registry holds: values that say their own name, which
// is the name the command line and the bridges use.
type named interface{ Name() string }

// registered is one value of a registry and its line of help.
type registered[T named] struct {
	value T
	help  string
}

// strategies is the strategy registry, in the order help lists them.
// Strategies are stateless values, so the registered value itself is
// handed out.
func strategies() []registered[Strategy] {
	return []registered[Strategy]{
		{Fair{}, "every GPU with the GPU-proportional share of CPU and memory, first fit (Synergy's +fair)"},
		{Greedy{}, "the ideal demand first fit, else wait (Synergy-GREEDY)"},
		{Tune{}, "the ideal demand, else the fair share, else revert this round's peers to theirs (Synergy-TUNE)"},
		{Opt{}, "one LP per round over the jobs' matrices, rounded and placed best fit (Synergy-OPT)"},
		{DRF{}, "smallest dominant share first; the ideal demand or wait"},
		{DRF{Tune: true}, "smallest dominant share first; placed as tune"},
		{Tetris{}, "least weighted remaining work first, on the best-aligned server; the ideal demand or wait"},
		{Tetris{Tune: true}, "as tetris, falling back to the fair share and tune's reverts"},
	}
}

// policies is the policy registry, in the order help lists them.
func policies() []registered[Policy] {
	return []registered[Policy]{
		{FIFO{}, "arrival order"},
		{SRTF{}, "shortest remaining time first"},
		{LAS{}, "least attained service first, only the jobs that fit the free GPUs by count"},
		{FTF{}, "worst finish-time fairness first (Themis)"},
		{FTF{Ascending: true}, "FTF as Synergy sorts it, best first (for comparisons with the original)"},
	}
}

// NewStrategy returns the strategy called name (one of StrategyNames).
func NewStrategy(name string) (Strategy, error) { return lookup("strategy", name, strategies()) }

// StrategyNames lists the strategies NewStrategy knows.
func StrategyNames() []string { return names(strategies()) }

// StrategyHelp is one line per strategy: "name: what it does".
func StrategyHelp() string { return help(strategies()) }

// NewPolicy returns the policy called name (one of PolicyNames).
func NewPolicy(name string) (Policy, error) { return lookup("policy", name, policies()) }

// PolicyNames lists the policies NewPolicy knows.
func PolicyNames() []string { return names(policies()) }

// PolicyHelp is one line per policy: "name: what it does".
func PolicyHelp() string { return help(policies()) }

func lookup[T named](kind, name string, reg []registered[T]) (T, error) {
	for _, r := range reg {
		if r.value.Name() == name {
			return r.value, nil
		}
	}
	var none T
	return none, fmt.Errorf("unknown %s %q (have %s)", kind, name, strings.Join(names(reg), ", "))
}

func names[T named](reg []registered[T]) []string {
	out := make([]string, len(reg))
	for i, r := range reg {
		out[i] = r.value.Name()
	}
	return out
}

func help[T named](reg []registered[T]) string {
	var b strings.Builder
	for _, r := range reg {
		fmt.Fprintf(&b, "%s: %s\n", r.value.Name(), r.help)
	}
	return b.String()
}
