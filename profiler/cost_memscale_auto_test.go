package profiler

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestChooseMemScale(t *testing.T) {
	const gib = 1 << 30
	audio := MemScaleInput{ // 32 GiB of 1–2 MiB clips read at 100 MB/s on a 23 GiB host
		DatasetBytes: 32 * gib, DatasetFiles: 22000, LargestFileBytes: 2 << 20,
		ReadBytesPerS: 100e6, MemPoints: 10, DRAMBytes: 23 * gib, MaxLimitBytes: 20 * gib,
	}
	pass := float64(32*gib) / 100e6 // 343.6 s
	tests := []struct {
		name     string
		edit     func(*MemScaleInput)
		want     float64 // 1: full size
		warm     bool
		inReason string
	}{
		// f_time = 60 s / 343.6 s = 0.175; f_mem = 23/2/32 = 0.36: time decides.
		{"time decides", func(*MemScaleInput) {}, 60 / pass, true, "takes 344 s at 100 MB/s"},
		// a 15 min budget over 8 memory points: 900/2/8 = 56.25 s a pass.
		{"time budget", func(in *MemScaleInput) { in.TimeBudget = 15 * time.Minute; in.MemPoints = 8 }, 56.25 / pass, true, "half the time budget"},
		// bandwidth unknown: memory decides, 23/2/32 = 0.359.
		{"memory decides", func(in *MemScaleInput) { in.ReadBytesPerS = 0 }, 23.0 / 2 / 32, true, "half of this host's"},
		// one 8 GiB file of 32: 25% > 10%.
		{"one big file", func(in *MemScaleInput) { in.LargestFileBytes = 8 * gib }, 1, false, "one file holds 25%"},
		// 1000 files: the floor 256/1000 = 0.256 lifts 0.175.
		{"file floor", func(in *MemScaleInput) { in.DatasetFiles = 1000 }, 0.256, true, "raised to keep 256"},
		// 400 files: 256/400 = 0.64 >= 0.5: full size.
		{"too few files", func(in *MemScaleInput) { in.DatasetFiles = 400 }, 1, false, "raised to keep 256"},
		// 130 files of a small dataset: nothing to raise, and the reason says
		// only why full size (it once read "full size: ; raised to keep 256
		// of the 130 files").
		{"fewer files than a sample", func(in *MemScaleInput) {
			in.DatasetBytes, in.DatasetFiles, in.ReadBytesPerS, in.MaxLimitBytes = 192<<20, 130, 80e6, 144<<20
		}, 1, false, "full size: a pass over the whole dataset fits the allowance"},
		// 130 files read slowly: the sample would be raised past the whole dataset.
		{"fewer files, slow reads", func(in *MemScaleInput) { in.DatasetFiles = 130 }, 1, false, "its 130 files are fewer than the 256"},
		// 96 MiB read at 500 MB/s: a pass of 0.2 s.
		{"small dataset", func(in *MemScaleInput) {
			in.DatasetBytes, in.DatasetFiles, in.ReadBytesPerS, in.MaxLimitBytes = 96<<20, 1000, 500e6, 384<<20
		}, 1, false, "fits the allowance"},
		{"no memory point", func(in *MemScaleInput) { in.MemPoints = 0 }, 1, false, "no limited memory point"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := audio
			tt.edit(&in)
			got := ChooseMemScale(in)
			if math.Abs(got.Frac-tt.want) > 1e-9 || got.WarmSample != tt.warm {
				t.Errorf("ChooseMemScale = %.4f (warm %v), want %.4f (warm %v); reason %q", got.Frac, got.WarmSample, tt.want, tt.warm, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.inReason) {
				t.Errorf("reason %q does not say %q", got.Reason, tt.inReason)
			}
			if got.Frac < 1 && got.Frac*float64(in.DatasetFiles) < MinSampleFiles-1e-9 {
				t.Errorf("a sample of %.0f files", got.Frac*float64(in.DatasetFiles))
			}
		})
	}
}

// With no scale given, a sweep over a dataset that is slow to read and
// larger than half the host's memory measures its memory points (and its
// unlimited column, warm) on a sample, and says which scale and why.
func TestRun_ChoosesTheScaleAndSaysWhy(t *testing.T) {
	cfg := baseConfig(t, &fakeRunner{rate: trueRate})
	data := filepath.Join(t.TempDir(), "big")
	for c := 0; c < 4; c++ { // 1000 files of 1 KiB in 4 class folders
		dir := filepath.Join(data, fmt.Sprintf("c%d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 250; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), make([]byte, 1024), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg.DataDir = data
	cfg.ReadBPS = 1000           // a pass: 1,024,000 B / 1000 B/s = 1024 s
	cfg.Host.DRAMBytes = 1 << 20 // the dataset (1000 KiB) > half of it
	cfg.MemLimits = []int64{256 << 10, 512 << 10}
	cfg.Strategy = StrategyGrid
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// f_time = 60/1024 = 0.059 < f_mem = 0.5 MiB / 1000 KiB = 0.52; the
	// floor 256/1000 = 0.256 lifts it.
	if math.Abs(p.Cost.MemScale-0.256) > 1e-9 || !strings.Contains(p.Cost.MemScaleReason, "takes 1024 s") {
		t.Fatalf("cost: scale %g, reason %q; want 0.256 for the read time", p.Cost.MemScale, p.Cost.MemScaleReason)
	}
	warned := false
	for _, w := range p.Warnings {
		warned = warned || strings.Contains(w, "unlimited column is measured on the warm sample")
	}
	if !warned {
		t.Errorf("warnings %q: want the warm-sample unlimited column said", p.Warnings)
	}
	for _, c := range p.Cells {
		if !c.Measured {
			continue
		}
		if c.Stats.MemScale <= 0 || c.Stats.MemScale > 0.4 {
			t.Errorf("cell %g/%d ran on a share of %g, want the ~0.256 sample (the dataset does not fit: the unlimited column too)",
				c.CPUs, c.MemLimitBytes, c.Stats.MemScale)
		}
		if c.MemLimitBytes > 0 && c.Stats.ScaledMemLimitBytes >= c.MemLimitBytes {
			t.Errorf("cell %g/%d ran under %d, want a scaled limit", c.CPUs, c.MemLimitBytes, c.Stats.ScaledMemLimitBytes)
		}
	}
	// Given a scale, the profile says so.
	cfg2 := baseConfig(t, &fakeRunner{rate: trueRate})
	cfg2.MemScale = 1
	p2, err := run(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Cost.MemScale != 1 || p2.Cost.MemScaleReason != "given" {
		t.Errorf("given scale recorded as %g %q", p2.Cost.MemScale, p2.Cost.MemScaleReason)
	}
}
