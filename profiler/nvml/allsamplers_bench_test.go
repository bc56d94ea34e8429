package nvml

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/profiler/cgstat"
	"github.com/synergy-sched/synergy/profiler/host"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// allSamplers builds the profiler's three samplers as a profiling point runs
// them: the host (real /proc), this process's own cgroup (real files) and
// NVML (the system library where there is one, else go-nvml's DGX H100 mock
// with one GPU: see benchGPU).
func allSamplers(b *testing.B) []sample.Sampler {
	b.Helper()
	hs, err := host.NewSampler(host.Options{DiskPath: "."})
	if err != nil {
		b.Fatal(err)
	}
	paths, err := cgroupfs.PathsOf("/proc", os.Getpid())
	if err != nil {
		testreq.Skip(b, "cgroup", err.Error())
	}
	r, err := cgroupfs.Open(paths)
	if err != nil {
		testreq.Skip(b, "cgroup", err.Error())
	}
	b.Cleanup(func() { r.Close() })
	out := []sample.Sampler{hs, cgstat.NewSampler(r, nil)}
	if c := benchGPU(b); c != nil {
		b.Cleanup(func() { c.Close() })
		out = append(out, NewSampler(c, nil, nil))
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAllSamplers10Hz measures what sampling costs the machine.
//
// tick: one Tick of every sampler plus the sinks (JSON lines to io.Discard
// and the aggregator). At 10 Hz the cost per second is 10 ticks: the
// reported core-%@10Hz = 10 × CPU time per tick / 1 s × 100 must stay under
// 1 (10 ms of CPU per second, i.e. under 1 ms per tick).
//
// run-1s: the real loop on its real ticker for one second per iteration;
// core-% is the process CPU time over the wall time.
func BenchmarkAllSamplers10Hz(b *testing.B) {
	b.Run("tick", func(b *testing.B) {
		l, err := sample.NewLoop(sample.DefaultInterval, sample.Tee(sample.NewJSONLWriter(io.Discard), sample.NewAggregator()), allSamplers(b)...)
		if err != nil {
			b.Fatal(err)
		}
		l.Tick(time.Now()) // first tick: host CPU baseline
		cpu0 := cpuTime()
		b.ResetTimer()
		for b.Loop() {
			l.Tick(time.Now())
		}
		perTick := (cpuTime() - cpu0) / time.Duration(b.N)
		b.ReportMetric(float64(perTick.Microseconds()), "cpu-µs/tick")
		b.ReportMetric(10*perTick.Seconds()*100, "core-%@10Hz")
		for _, h := range l.Health() {
			if h.Failures > 0 {
				b.Errorf("sampler %s failed: %v", h.Name, h.Errors)
			}
		}
	})
	b.Run("run-1s", func(b *testing.B) {
		l, err := sample.NewLoop(sample.DefaultInterval, sample.Tee(sample.NewJSONLWriter(io.Discard), sample.NewAggregator()), allSamplers(b)...)
		if err != nil {
			b.Fatal(err)
		}
		cpu0, wall0 := cpuTime(), time.Now()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			l.Run(ctx)
			cancel()
		}
		b.ReportMetric((cpuTime()-cpu0).Seconds()/time.Since(wall0).Seconds()*100, "core-%")
		ticks := 0
		for _, h := range l.Health() {
			ticks = max(ticks, h.Samples+h.Failures)
		}
		b.ReportMetric(float64(ticks)/time.Since(wall0).Seconds(), "ticks/s")
	})
}
