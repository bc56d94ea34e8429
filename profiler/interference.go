package profiler

import (
	"fmt"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// noteInterference warns about a measured point during which other work
// used more than sensitivity.InterferenceCores of the host: its figure is
// what the job did beside that work, not on a quiet host. The demand rule
// reads the same cells (Profile.Interfered) as not deciding a demand alone.
func (s *recorder) noteInterference(c sensitivity.Cell) {
	if !c.Measured || c.Failure != nil {
		return
	}
	other, ok := sensitivity.OtherWorkCores(c.Stats, s.prof.Host.LogicalCPUs)
	if !ok || other <= sensitivity.InterferenceCores {
		return
	}
	s.warnf("cpus=%g mem=%s: other work on this host used %.2f cores on average while the point ran (the host %.0f%% busy, the job %.2f cores): its figure is the job's beside that work, lower and noisier than on a quiet host",
		c.CPUs, units.FormatMemLimit(c.MemLimitBytes), other, c.Stats.HostCPUPctMean, c.Stats.CPUCoresMean)
}

// speedSpread is how far, as a share of the fastest, the slowest measured
// point's CPUs ran below the fastest point's (PointStats.CPUSpeedMOps)
// before a profile warns about it.
const speedSpread = 0.10

// speedNote warns when the host's CPUs ran at different speeds for
// different measured points: a fixed loop timed on each point's CPUs
// (profiler/cpuspeed) ran more than speedSpread slower for one than for
// another. On a shared VM that is work the guest cannot see (no steal time
// shows it), and a CPU-bound cell moves with it. "" when the speeds agree
// or fewer than two points have one.
func speedNote(p *sensitivity.Profile) string {
	var slow, fast *sensitivity.Cell
	for i := range p.Cells {
		c := &p.Cells[i]
		if !c.Measured || c.Failure != nil || c.Stats == nil || c.Stats.CPUSpeedMOps <= 0 {
			continue
		}
		if slow == nil || c.Stats.CPUSpeedMOps < slow.Stats.CPUSpeedMOps {
			slow = c
		}
		if fast == nil || c.Stats.CPUSpeedMOps > fast.Stats.CPUSpeedMOps {
			fast = c
		}
	}
	if slow == nil || slow == fast {
		return ""
	}
	drop := 1 - slow.Stats.CPUSpeedMOps/fast.Stats.CPUSpeedMOps
	if drop <= speedSpread {
		return ""
	}
	return fmt.Sprintf("the host's CPUs ran at different speeds for different points: a fixed loop on the point's CPUs (cpu_speed_mops) ran %.0f%% slower at cpus=%g mem=%s (%.0f) than at cpus=%g mem=%s (%.0f); a CPU-bound cell moves with its CPUs' speed, so differences between cells of that size may be the host's, not the job's",
		100*drop, slow.CPUs, units.FormatMemLimit(slow.MemLimitBytes), slow.Stats.CPUSpeedMOps,
		fast.CPUs, units.FormatMemLimit(fast.MemLimitBytes), fast.Stats.CPUSpeedMOps)
}
