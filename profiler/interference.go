package profiler

import (
	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/sensitivity"
)

// interferenceCores is how much CPU, in cores on average, work other than
// the job may use on the host while a point runs before the point is
// warned about. On a shared 2-core VM, a point's figure moved by up to a
// fifth between repeats of the same runner with a third of a core of other
// work, both when that work took the job's own cores (a data-bound 2-core
// point got 1.41-1.51 of its 2) and when it ran beside a 1-core point on
// the other core (the job's CPU time bought 141-169 samples/s per core):
// docs/pytorch.md.
const interferenceCores = 0.25

// otherWork is the CPU, in cores, that the host spent on other work while
// the point ran: its busy share of all logical CPUs minus the job's own
// use. ok=false when either was not sampled.
func otherWork(st *sensitivity.PointStats, logicalCPUs int) (cores float64, ok bool) {
	if st == nil || st.HostCPUPctMean <= 0 || st.CPUCoresMean <= 0 || logicalCPUs <= 0 {
		return 0, false
	}
	return max(0, st.HostCPUPctMean/100*float64(logicalCPUs)-st.CPUCoresMean), true
}

// noteInterference warns about a measured point during which other work
// used more than interferenceCores of the host: its figure is what the job
// did beside that work, not on a quiet host.
func (s *sweep) noteInterference(c sensitivity.Cell) {
	if !c.Measured || c.Failure != nil {
		return
	}
	other, ok := otherWork(c.Stats, s.prof.Host.LogicalCPUs)
	if !ok || other <= interferenceCores {
		return
	}
	s.warnf("cpus=%g mem=%s: other work on this host used %.2f cores on average while the point ran (the host %.0f%% busy, the job %.2f cores): its figure is the job's beside that work, lower and noisier than on a quiet host",
		c.CPUs, units.FormatMemLimit(c.MemLimitBytes), other, c.Stats.HostCPUPctMean, c.Stats.CPUCoresMean)
}
