// Package cpuspeed times a fixed loop on the CPUs a point runs on, once a
// sample tick, so that a profile can say when the host itself changed pace
// while it was measured. On a shared VM a core's speed moves with work the
// guest cannot see (a hyperthread sibling's, the host's clock): on this
// project's 2-vCPU development VM, idle but for the loop, one fixed loop ran
// 632 to 1,246 times a second (1.97x) and a JPEG decode 132 to 204 times,
// in stretches of seconds to minutes, with no steal time reported
// (docs/pytorch.md). A job's throughput moves with it, and no other counter
// in a profile shows why.
//
// The loop runs on an OS thread of its own, pinned to one CPU at a time, and
// is timed by that thread's CPU clock, so that time it waits for the CPU
// (the job's threads run there too) is not counted: what is left is how fast
// the CPU ran while the thread had it.
package cpuspeed

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// SeriesMOps is the loop's rate, in millions of rounds per CPU-second,
// averaged over the CPUs probed in one tick.
const SeriesMOps = "cpu_speed_mops"

// DefaultRounds is the loop's length: about 0.1 ms on a 2 GHz core, so
// that at the default 10 Hz the probe takes about 0.1 % of each CPU.
const DefaultRounds = 50_000

// MaxPerTick is how many of the cpuset's CPUs one tick probes; a larger
// cpuset is probed in turns, so that a tick costs at most this many loops.
const MaxPerTick = 4

// Sampler times the loop on the CPUs of a cpuset file (the job's cgroup),
// read every tick so that a point whose cpuset changes in place is followed;
// with no file, on the CPUs this process may run on.
type Sampler struct {
	cpusetFile string
	rounds     int
	next       int                                    // where in the cpuset the next tick starts
	measure    func(cpu, rounds int) (float64, error) // Measure; tests replace it
}

// New returns a sampler for a job with these cgroup directories (a
// runner.Handle's CgroupPaths): the v1 cpuset controller's cpuset.cpus, or
// the v2 directory's cpuset.cpus.effective; neither: this process's CPUs.
func New(cgroupPaths map[string]string) *Sampler {
	s := &Sampler{rounds: DefaultRounds, measure: Measure}
	if d, ok := cgroupPaths["cpuset"]; ok {
		s.cpusetFile = filepath.Join(d, "cpuset.cpus")
	} else if d, ok := cgroupPaths[cgroupfs.KeyUnified]; ok {
		s.cpusetFile = filepath.Join(d, "cpuset.cpus.effective")
	}
	return s
}

// Name implements sample.Sampler.
func (s *Sampler) Name() string { return "cpu_speed" }

// Sample implements sample.Sampler: the loop's mean rate over the cpuset's
// CPUs this tick (MaxPerTick of them at most, in turns).
func (s *Sampler) Sample(_ time.Time, out *sample.Record) error {
	cpus, err := s.cpus()
	if err != nil {
		return err
	}
	n := min(len(cpus), MaxPerTick)
	var sum float64
	for i := 0; i < n; i++ {
		r, err := s.measure(cpus[(s.next+i)%len(cpus)], s.rounds)
		if err != nil {
			return err
		}
		sum += r
	}
	s.next = (s.next + n) % len(cpus)
	out.Set(SeriesMOps, sum/float64(n))
	return nil
}

// cpus lists the CPUs to probe: the cpuset file's, else this process's.
func (s *Sampler) cpus() ([]int, error) {
	if s.cpusetFile != "" {
		b, err := os.ReadFile(s.cpusetFile)
		if err != nil {
			return nil, fmt.Errorf("cpu speed: %w", err)
		}
		cpus, err := runner.ParseCPUSet(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("cpu speed: %s: %w", s.cpusetFile, err)
		}
		if len(cpus) > 0 {
			return cpus, nil
		}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cpu speed: sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Measure runs the loop for rounds rounds on CPU cpu and returns its rate in
// millions of rounds per second of the thread's CPU time. The loop runs on a
// goroutine locked to a thread of its own that exits with it, so the
// pinning never reaches another goroutine.
func Measure(cpu, rounds int) (float64, error) {
	type result struct {
		mops float64
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- result{err: fmt.Errorf("cpu speed: pin to CPU %d: %w", cpu, err)}
			return
		}
		t0, err := threadCPU()
		if err != nil {
			done <- result{err: err}
			return
		}
		sink.Store(spin(rounds, sink.Load()))
		t1, err := threadCPU()
		if err != nil {
			done <- result{err: err}
			return
		}
		if t1 <= t0 {
			done <- result{err: fmt.Errorf("cpu speed: the thread's CPU clock did not advance over %d rounds", rounds)}
			return
		}
		done <- result{mops: float64(rounds) / (t1 - t0).Seconds() / 1e6}
	}()
	r := <-done
	return r.mops, r.err
}

// sink keeps the loop's result live so the compiler cannot drop the loop.
var sink atomic.Uint64

// spin is xorshift64: three dependent shifts and xors a round, no memory
// traffic, the same work on every CPU.
func spin(rounds int, x uint64) uint64 {
	x |= 1
	for i := 0; i < rounds; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// threadCPU reads the calling thread's CPU clock.
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("cpu speed: thread CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}
