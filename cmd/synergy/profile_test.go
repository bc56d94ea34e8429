package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/profiler"
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
