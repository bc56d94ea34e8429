package profiler

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/synergy-sched/synergy/runner"
)

func TestScaledMemLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name        string
		limit, anon int64
		frac        float64
		want        int64
	}{
		// A + f(L − A) = 64MiB + 0.25 × (256 − 64)MiB = 112MiB.
		{"quarter", 256 * mib, 64 * mib, 0.25, 112 * mib},
		// no known anon: L·f = 0.5 × 100MiB = 50MiB.
		{"no anon", 100 * mib, 0, 0.5, 50 * mib},
		// rounded up to a page: 0 + 0.3 × 10000 = 3000 -> 4096.
		{"page", 10000, 0, 0.3, 4096},
		// L ≤ A: the job does not fit either way: L.
		{"below anon", 32 * mib, 64 * mib, 0.25, 32 * mib},
		{"whole", 256 * mib, 64 * mib, 1, 256 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScaledMemLimit(tt.limit, tt.anon, tt.frac); got != tt.want {
				t.Errorf("ScaledMemLimit(%d, %d, %g) = %d, want %d", tt.limit, tt.anon, tt.frac, got, tt.want)
			}
		})
	}
}

func TestSampleDataset_KeepsLayoutAndShareOfBytes(t *testing.T) {
	src := t.TempDir()
	var total int64
	for c := 0; c < 4; c++ { // ImageFolder: 4 classes × 250 files of 1 KiB
		dir := filepath.Join(src, fmt.Sprintf("class%d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 250; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("img%03d.jpg", i)), make([]byte, 1024), 0o644); err != nil {
				t.Fatal(err)
			}
			total += 1024
		}
	}
	dst := filepath.Join(t.TempDir(), "sample")
	sd, err := sampleDataset(src, dst, 0.25, total)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 files kept with p = 0.25: 250 expected, sd = sqrt(1000 × 0.25 × 0.75) ≈ 13.7; allow 4 sd.
	if math.Abs(float64(sd.files)-250) > 55 || math.Abs(sd.frac-float64(sd.files)/1000) > 1e-9 {
		t.Errorf("sample of %d files (%.3f of the bytes), want about 250 (0.25)", sd.files, sd.frac)
	}
	n, _, err := DatasetSize(dst)
	if err != nil || n != sd.bytes {
		t.Errorf("sample dir holds %d bytes (%v), reported %d", n, err, sd.bytes)
	}
	for c := 0; c < 4; c++ {
		if _, err := os.Stat(filepath.Join(dst, fmt.Sprintf("class%d", c))); err != nil {
			t.Errorf("class folder %d missing from the sample: %v", c, err)
		}
	}
	// Hard links: the same inode as the original (same file system here).
	var one string
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && one == "" {
			one = p
		}
		return nil
	})
	rel, _ := filepath.Rel(dst, one)
	a, _ := os.Stat(one)
	b, _ := os.Stat(filepath.Join(src, rel))
	if !sd.linked || a.Sys().(*syscall.Stat_t).Ino != b.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("sample file %s is not a hard link of the original (linked=%v)", rel, sd.linked)
	}
	again, err := sampleDataset(src, filepath.Join(t.TempDir(), "again"), 0.25, total)
	if err != nil || again.files != sd.files || again.bytes != sd.bytes {
		t.Errorf("a second sample differs: %d files vs %d (%v)", again.files, sd.files, err)
	}
}

// cacheRate is a job whose throughput follows its page-cache hit
// fraction h = min(1, (limit − anon) / bytes under --data): 1600 samples/s
// from cache and 400 from disk, blended per sample.
func cacheRate(anon int64) func(l runner.Limits, dataBytes int64) float64 {
	return func(l runner.Limits, dataBytes int64) float64 {
		h := 1.0
		if l.MemLimitBytes > 0 && dataBytes > 0 {
			h = math.Max(0, math.Min(1, float64(l.MemLimitBytes-anon)/float64(dataBytes)))
		}
		return 1 / (h/1600 + (1-h)/400)
	}
}

func TestRun_MemScaleMeasuresOnASampleWithTheSameHitFraction(t *testing.T) {
	const anon = 40 << 20
	lr := &liveRunner{byData: cacheRate(anon), anon: anon, noise: 0.04}
	cfg := baseConfig(t, nil)
	cfg.Runner = lr
	// 40 files of 1 MiB: a 40 MiB dataset (10 iterations of batch 4 a pass).
	for i := 0; i < 40; i++ {
		if err := os.WriteFile(filepath.Join(cfg.DataDir, fmt.Sprintf("s%02d", i)), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.CPUs = []float64{1}
	cfg.MemLimits = []int64{50 << 20, 60 << 20} // hit fractions 10/40 and 20/40
	cfg.Strategy = StrategyGrid
	full, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lr.dirs = nil
	cfg.Out = filepath.Join(t.TempDir(), "scaled.json")
	cfg.MemScale = 0.5
	scaled, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cfg.MemLimits {
		f, s := full.Cell(1, m), scaled.Cell(1, m)
		if s.Stats.MemScale <= 0.2 || s.Stats.MemScale >= 0.8 || s.Stats.ScaledMemLimitBytes >= m || s.Stats.ScaledMemLimitBytes <= anon {
			t.Errorf("mem=%d: scale %g, scaled limit %d: want a sample and a limit between the job's memory and the full one", m, s.Stats.MemScale, s.Stats.ScaledMemLimitBytes)
		}
		// The sample keeps the hit fraction, so the throughput: within the
		// points' 2% intervals (and the fake's noise).
		if rel := math.Abs(s.SamplesPerS-f.SamplesPerS) / f.SamplesPerS; rel > 0.04 {
			t.Errorf("mem=%d: scaled %.1f samples/s vs full %.1f (%.1f%% off)", m, s.SamplesPerS, f.SamplesPerS, 100*rel)
		}
	}
	if u := scaled.Cell(1, 0); u.Stats.MemScale != 0 {
		t.Errorf("the unlimited point was scaled (%g): only limited memory points are", u.Stats.MemScale)
	}
	sampled := 0
	for _, d := range lr.dirs {
		if d != cfg.DataDir {
			sampled++
		}
	}
	if sampled != 1 {
		t.Errorf("%d jobs read the sample, want one launch serving the 2 scaled memory points (dirs %v)", sampled, lr.dirs)
	}
}
