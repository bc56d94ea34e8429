package local

import (
	"fmt"
	"slices"
	"testing"

	"github.com/synergy-sched/synergy/runner"
)

func TestV2UpdateFiles(t *testing.T) {
	tests := []struct {
		name string
		p    plan
		want [][2]string
	}{
		{"cpus and memory", plan{CPUSet: []int{0, 1}, QuotaUS: 150000, PeriodUS: 100000, MemLimitBytes: 1 << 30, NoSwap: true},
			[][2]string{{"cpuset.cpus", "0-1"}, {"cpu.max", "150000 100000"}, {"memory.swap.max", "0"}, {"memory.max", "1073741824"}}},
		{"lifted", plan{CPUSet: []int{0, 1, 2, 3}},
			[][2]string{{"cpuset.cpus", "0-3"}, {"cpu.max", "max 100000"}, {"memory.swap.max", "max"}, {"memory.max", "max"}}},
		{"swap allowed", plan{CPUSet: []int{2}, QuotaUS: 50000, PeriodUS: 100000, MemLimitBytes: 64 << 20},
			[][2]string{{"cpuset.cpus", "2"}, {"cpu.max", "50000 100000"}, {"memory.swap.max", "max"}, {"memory.max", "67108864"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v2UpdateFiles(tt.p); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestV1UpdateResources(t *testing.T) {
	neg := int64(-1)
	tests := []struct {
		name     string
		p        plan
		cur      int64
		quota    int64
		memOrder []string // files written, in order, with their values
	}{
		// Lifting both limits writes memsw (-1) before the limit (-1).
		{"lift", plan{CPUSet: []int{0, 1}, NoSwap: true}, 64 << 20, neg, []string{"memsw=-1", "limit=-1"}},
		// Raising 64MiB -> 128MiB = 134217728: memsw first.
		{"raise", plan{CPUSet: []int{0}, QuotaUS: 50000, PeriodUS: 100000, MemLimitBytes: 128 << 20, NoSwap: true}, 64 << 20, 50000,
			[]string{"memsw=134217728", "limit=134217728"}},
		// Lowering 128MiB -> 96MiB = 100663296: the limit first.
		{"lower", plan{CPUSet: []int{0}, QuotaUS: 50000, PeriodUS: 100000, MemLimitBytes: 96 << 20, NoSwap: true}, 128 << 20, 50000,
			[]string{"limit=100663296", "memsw=100663296"}},
		// Swap not accounted: the limit only.
		{"no swap accounting", plan{CPUSet: []int{0}, MemLimitBytes: 1 << 20}, 0, neg, []string{"limit=1048576"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu, mem := v1UpdateResources(tt.p, tt.cur)
			if cpu.CPU.Cpus != runner.FormatCPUSet(tt.p.CPUSet) || *cpu.CPU.Quota != tt.quota || *cpu.CPU.Period != runner.DefaultCFSPeriodUS {
				t.Errorf("cpu = %+v, want cpuset %v, quota %d", cpu.CPU, tt.p.CPUSet, tt.quota)
			}
			var got []string
			for _, m := range mem {
				if m.Memory.Swap != nil {
					got = append(got, fmt.Sprintf("memsw=%d", *m.Memory.Swap))
				}
				if m.Memory.Limit != nil {
					got = append(got, fmt.Sprintf("limit=%d", *m.Memory.Limit))
				}
			}
			if !slices.Equal(got, tt.memOrder) {
				t.Errorf("memory writes %v, want %v", got, tt.memOrder)
			}
		})
	}
}
