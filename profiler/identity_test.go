package profiler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

// resumeCase profiles one CPU point, changes the run as tc says, and
// resumes it.
func TestRun_ResumeRefusesAnotherIdentity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, cfg *Config)
		want   []string // substrings of the refusal, in order
	}{
		{"another dataset", func(t *testing.T, cfg *Config) {
			other := filepath.Join(t.TempDir(), "other")
			os.MkdirAll(other, 0o755)
			os.WriteFile(filepath.Join(other, "a"), []byte("xyz"), 0o644)
			cfg.DataDir = other
		}, []string{"the profile was measured with --data ", "(40B in 40 files, fingerprint ", "this run has --data " + "OTHER (3B in 1 file,"}},
		{"a dataset file added", func(t *testing.T, cfg *Config) {
			os.WriteFile(filepath.Join(cfg.DataDir, "s99"), []byte("x"), 0o644)
		}, []string{"--data ", "(41B in 41 files", "(its contents changed)"}},
		{"a dataset file rewritten in place", func(t *testing.T, cfg *Config) {
			path := filepath.Join(cfg.DataDir, "s07")
			os.WriteFile(path, []byte("y"), 0o644) // same size; the time moves
			os.Chtimes(path, time.Now(), time.Now().Add(time.Hour))
		}, []string{"--data ", "(40B in 40 files, fingerprint ", "(its contents changed)"}},
		{"another CPU grid", func(t *testing.T, cfg *Config) {
			cfg.CPUs = []float64{1, 2}
		}, []string{"the profile was measured with --cpus 1, this run has --cpus 1,2"}},
		{"another memory grid", func(t *testing.T, cfg *Config) {
			cfg.MemLimits = []int64{1 << 30}
		}, []string{"--mem-limits (none), this run has --mem-limits 1GiB"}},
		{"another batch and strategy", func(t *testing.T, cfg *Config) {
			cfg.Batch = 8
			cfg.Strategy = StrategyGrid
		}, []string{"--strategy axes, this run has --strategy grid", "--batch 4, this run has --batch 8"}},
		{"another image", func(t *testing.T, cfg *Config) {
			cfg.Image = "train:v2"
		}, []string{"--docker-img (none), this run has --docker-img train:v2"}},
		{"the script edited", func(t *testing.T, cfg *Config) {
			os.WriteFile(cfg.Command[1], []byte("print('v2')\n"), 0o644)
		}, []string{"the file ", "train.py (", "(its contents changed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := &fakeRunner{rate: trueRate}
			cfg := baseConfig(t, fr)
			script := filepath.Join(t.TempDir(), "train.py")
			os.WriteFile(script, []byte("print('v1')\n"), 0o644)
			cfg.Command = []string{"python3", script, "--lr", "0.1"}
			cfg.CPUs, cfg.MemLimits = []float64{1}, nil
			p, err := run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if id := p.Identity; id == nil || id.Data == nil || id.Data.Files != 40 || len(id.Files) != 1 || id.Files[0].Arg != 1 {
				t.Fatalf("identity = %+v, want the dataset's 40 files and the script (argument 1)", id)
			}
			before, _ := os.ReadFile(cfg.Out)
			cfg.Resume = true
			tc.change(t, &cfg.Config)
			_, err = run(context.Background(), cfg)
			if err == nil {
				t.Fatal("resume accepted a different run")
			}
			msg := strings.ReplaceAll(err.Error(), cfg.DataDir, "OTHER")
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("refusal %q lacks %q (after byte %d)", msg, w, at)
				}
				at += i + len(w)
			}
			if after, _ := os.ReadFile(cfg.Out); string(after) != string(before) {
				t.Error("a refused resume changed the profile")
			}
		})
	}
}

func TestRun_ResumeSameIdentity(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = nil
	stop := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	fr.onStart = func(n int) {
		if n == 2 {
			cancel()
			close(stop)
		}
	}
	if _, err := run(ctx, cfg); err != ErrInterrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
	<-stop
	fr.onStart = nil
	cfg.Resume = true
	cfg.CPUs = []float64{2, 1, 2} // the same axis, in another order
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("resume of the same run refused: %v", err)
	}
	if len(p.MeasuredOK()) != 2 {
		t.Errorf("%d measured cells, want 2", len(p.MeasuredOK()))
	}
}

// A profile written before identities were recorded resumes on what it
// does record, with a warning, and is refused on a difference there.
func TestRun_ResumeLegacyProfile(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = nil
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Identity = nil
	if err := p.Save(cfg.Out); err != nil {
		t.Fatal(err)
	}
	cfg.Resume = true
	cfg.DataDir = t.TempDir()
	if _, err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "this run has --data "+cfg.DataDir) {
		t.Fatalf("err = %v, want --data named", err)
	}
	cfg.DataDir = p.Job.DataDir
	p2, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("resume of a legacy profile with the same settings: %v", err)
	}
	if p2.Identity == nil || p2.Identity.Version != sensitivity.IdentityVersion {
		t.Errorf("identity = %+v, want this run's recorded", p2.Identity)
	}
	if !strings.Contains(strings.Join(p2.Warnings, "\n"), "records no identity") {
		t.Errorf("warnings %q do not say the contents went unchecked", p2.Warnings)
	}
}

func TestFingerprintDataset(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, name), time.Unix(1e9, 0), time.Unix(1e9, 0))
	}
	big := strings.Repeat("a", 3*FingerprintEdgeBytes)
	write("x/1", big)
	write("x/2", "bb")
	d1, err := FingerprintDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d1.Bytes != int64(len(big)+2) || d1.Files != 2 || len(d1.Fingerprint) != 64 {
		t.Fatalf("dataset = %+v, want 2 files of %d bytes and a SHA-256", d1, len(big)+2)
	}
	fp := func() string {
		d, err := FingerprintDataset(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d.Fingerprint
	}
	if fp() != d1.Fingerprint {
		t.Fatal("fingerprint not deterministic")
	}
	// The last KiB edited in place, size and time kept: seen.
	write("x/1", big[:len(big)-1]+"z")
	if fp() == d1.Fingerprint {
		t.Error("an edit of the last KiB kept the fingerprint")
	}
	write("x/1", big)
	if fp() != d1.Fingerprint {
		t.Fatal("restored file, fingerprint differs")
	}
	// A rename: seen.
	os.Rename(filepath.Join(dir, "x/2"), filepath.Join(dir, "x/3"))
	if fp() == d1.Fingerprint {
		t.Error("a rename kept the fingerprint")
	}
	if _, err := FingerprintDataset(filepath.Join(dir, "x/1")); err == nil || !strings.Contains(err.Error(), "data: ") {
		t.Errorf("a file as dataset: err = %v, want the data setting named", err)
	}
}

func TestSampleIndexes(t *testing.T) {
	// 100 files, 4 samples: 0, 99/3=33, 2*99/3=66, 99.
	got := sampleIndexes(100, 4)
	want := []int{0, 33, 66, 99}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sampleIndexes(100, 4) = %v, want %v", got, want)
		}
	}
	if got := sampleIndexes(3, 32); len(got) != 3 {
		t.Errorf("sampleIndexes(3, 32) = %v, want all 3", got)
	}
}
