package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/profiler"
	"github.com/synergy-sched/synergy/sensitivity"
)

func TestTextProgress_BarOnTerminalLinesOtherwise(t *testing.T) {
	cfg := profiler.Config{TargetRelCI: 0.02, MaxIterations: 400, PointTimeout: 100 * time.Second}
	var tty bytes.Buffer
	p := newTextProgress(&tty, true, cfg)
	p.PointStart(1, "3", "cpus=1 mem=unlimited")
	// CI at 4% with a 2% target: (0.02/0.04)² = 25% of the way;
	// 40 of 400 iterations is 10%, 10 s of 100 s is 10%: the bar shows 25%.
	p.PointUpdate("cpus=1 mem=unlimited", 40, profiler.Estimate{SamplesPerS: 100, HalfWidth: 4, Batches: 10}, 10*time.Second)
	if !strings.Contains(tty.String(), "\r\033[K[#####...............] [1/3] cpus=1 mem=unlimited: 40 iterations measured") {
		t.Errorf("terminal line = %q", tty.String())
	}
	var plain bytes.Buffer
	p = newTextProgress(&plain, false, cfg)
	p.PointStart(1, "3", "cpus=1 mem=unlimited")
	p.PointUpdate("cpus=1 mem=unlimited", 40, profiler.Estimate{SamplesPerS: 100, HalfWidth: 4, Batches: 10}, 10*time.Second)
	if strings.ContainsAny(plain.String(), "\r\033#") {
		t.Errorf("plain output has terminal control or a bar: %q", plain.String())
	}
}

// Issue 44: a point waiting says what for, and a predicted OOM kill prints
// as such, not as a predicted ~0.0.
func TestTextProgress_SaysWhatAPointWaitsForAndOOMCells(t *testing.T) {
	var out bytes.Buffer
	p := newTextProgress(&out, true, profiler.Config{TargetRelCI: 0.02, MaxIterations: 400, PointTimeout: 100 * time.Second})
	p.PointStart(1, "3", "cpus=1 mem=unlimited")
	p.PointUpdate("cpus=1 mem=unlimited", 0, profiler.Estimate{Waiting: "waiting for the job's first iteration"}, time.Second)
	if s := out.String(); !strings.Contains(s, "cpus=1 mem=unlimited: waiting for the job's first iteration") || strings.Contains(s, "0 iterations measured") {
		t.Errorf("progress %q, want what the point waits for", s)
	}
	if got := cellText(&sensitivity.Cell{CPUs: 1, MemLimitBytes: 1 << 30}); got != "~OOM" {
		t.Errorf("predicted zero cell prints %q, want ~OOM", got)
	}
	if got := cellText(&sensitivity.Cell{CPUs: 1, SamplesPerS: 12.5}); got != "~12.5" {
		t.Errorf("predicted cell prints %q, want ~12.5", got)
	}
}
