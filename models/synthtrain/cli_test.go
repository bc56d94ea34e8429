package synthtrain

import (
	"errors"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

func TestParseTrainArgs(t *testing.T) {
	cpus := runtime.NumCPU()
	tests := []struct {
		name string
		args []string
		// want holds the fields checked; Preset is checked by name.
		want       TrainConfig
		wantPreset string
	}{
		{
			name:       "preset defaults",
			args:       []string{"--data", "/d"},
			want:       TrainConfig{Batch: 32, Workers: cpus, Prefetch: 2 * cpus, PrefetchPerWorker: 2, GPUStep: 8 * time.Millisecond, Data: "/d", Seed: 1},
			wantPreset: "image",
		},
		{
			name:       "language defaults, short forms",
			args:       []string{"--preset=language", "-b", "16", "-j", "3", "--data=/d"},
			want:       TrainConfig{Batch: 16, Workers: 3, Prefetch: 6, PrefetchPerWorker: 2, GPUStep: 50 * time.Millisecond, Data: "/d", Seed: 1},
			wantPreset: "language",
		},
		{
			name: "profiler's appended flags win over the user's",
			args: []string{"--batch", "64", "--workers", "8", "--max-iterations", "1000", "--data", "/user",
				"--batch", "32", "--workers", "2", "--max-iterations", "50", "--data", "/mnt/data"},
			want:       TrainConfig{Batch: 32, Workers: 2, Prefetch: 4, PrefetchPerWorker: 2, MaxIterations: 50, GPUStep: 8 * time.Millisecond, Data: "/mnt/data", Seed: 1},
			wantPreset: "image",
		},
		{
			name:       "long and short spellings share one value, last wins",
			args:       []string{"-b", "8", "--batch=12", "-j=5", "--workers", "1", "--data", "/d"},
			want:       TrainConfig{Batch: 12, Workers: 1, Prefetch: 2, PrefetchPerWorker: 2, GPUStep: 8 * time.Millisecond, Data: "/d", Seed: 1},
			wantPreset: "image",
		},
		{
			name:       "max_iterations then max-iterations",
			args:       []string{"--max_iterations", "10", "--max-iterations", "20", "--data", "/d", "-j", "1"},
			want:       TrainConfig{Batch: 32, Workers: 1, Prefetch: 2, PrefetchPerWorker: 2, MaxIterations: 20, GPUStep: 8 * time.Millisecond, Data: "/d", Seed: 1},
			wantPreset: "image",
		},
		{
			name:       "max-iterations then max_iterations",
			args:       []string{"--max-iterations=20", "--max_iterations=10", "--data", "/d", "-j", "1"},
			want:       TrainConfig{Batch: 32, Workers: 1, Prefetch: 2, PrefetchPerWorker: 2, MaxIterations: 10, GPUStep: 8 * time.Millisecond, Data: "/d", Seed: 1},
			wantPreset: "image",
		},
		{
			name:       "explicit gpu-step, prefetch, seed; synthetic needs no data",
			args:       []string{"--synthetic-data", "--preset", "audio", "--gpu-step", "0s", "--prefetch", "1", "--seed", "9", "-j", "2"},
			want:       TrainConfig{Batch: 16, Workers: 2, Prefetch: 1, GPUStep: 0, Synthetic: true, Seed: 9},
			wantPreset: "audio",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTrainArgs(tt.args)
			if err != nil {
				t.Fatalf("ParseTrainArgs(%q): %v", tt.args, err)
			}
			if got.Preset.Name != tt.wantPreset {
				t.Errorf("preset %q, want %q", got.Preset.Name, tt.wantPreset)
			}
			got.Preset = Preset{}
			if got != tt.want {
				t.Errorf("ParseTrainArgs(%q)\n got %+v\nwant %+v", tt.args, got, tt.want)
			}
		})
	}
}

func TestParseTrainArgs_Errors(t *testing.T) {
	tests := []struct {
		args []string
		// wantMsg must appear in the error: it names the flag or argument.
		wantMsg string
	}{
		{[]string{"--data", "/d", "--bogus"}, "bogus"},
		{[]string{"--data", "/d", "--batch", "x"}, "batch"},
		{[]string{"--data", "/d", "-b", "0"}, "--batch"},
		{[]string{"--data", "/d", "-j", "0"}, "--workers"},
		{[]string{"--data", "/d", "-j", "1025"}, "--workers"},
		{[]string{"--data", "/d", "--max-iterations", "-1"}, "--max-iterations"},
		{[]string{"--data", "/d", "--prefetch", "0"}, "--prefetch"},
		{[]string{"--data", "/d", "--gpu-step", "5"}, "gpu-step"},
		{[]string{"--data", "/d", "--gpu-step", "-5ms"}, "--gpu-step"},
		{[]string{"--data", "/d", "--preset", "video"}, "--preset"},
		{[]string{"-b", "4"}, "--data"},
		{[]string{"--data", "/d", "extra"}, `"extra"`},
	}
	for _, tt := range tests {
		_, err := ParseTrainArgs(tt.args)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("ParseTrainArgs(%q) = %v, want a UsageError", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("ParseTrainArgs(%q) = %q, want it to mention %q", tt.args, err, tt.wantMsg)
		}
	}
	for _, h := range []string{"-h", "--help"} {
		if _, err := ParseTrainArgs([]string{h}); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("ParseTrainArgs(%q) = %v, want flag.ErrHelp", h, err)
		}
	}
}

func TestParseGenArgs(t *testing.T) {
	got, err := ParseGenArgs([]string{"--dir", "/x", "--bytes", "2MiB", "--preset", "audio", "--seed", "3", "--classes", "4", "-j", "1", "--bytes=1MiB"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != "/x" || got.Bytes != 1<<20 || got.Preset.Name != "audio" || got.Seed != 3 || got.Classes != 4 || got.Workers != 1 {
		t.Errorf("got %+v", got)
	}
	def, err := ParseGenArgs([]string{"--dir", "/x", "--bytes", "1k"})
	if err != nil {
		t.Fatal(err)
	}
	if def.Preset.Name != "image" || def.Seed != 1 || def.Classes != 10 {
		t.Errorf("defaults: got preset %q seed %d classes %d, want image 1 10", def.Preset.Name, def.Seed, def.Classes)
	}
	for _, tt := range []struct {
		args    []string
		wantMsg string
	}{
		{[]string{"--bytes", "1MiB"}, "--dir"},
		{[]string{"--dir", "/x"}, "--bytes"},
		{[]string{"--dir", "/x", "--bytes", "8XB"}, "--bytes"},
		{[]string{"--dir", "/x", "--bytes", "0"}, "--bytes"},
		{[]string{"--dir", "/x", "--bytes", "1MiB", "--classes", "0"}, "--classes"},
		{[]string{"--dir", "/x", "--bytes", "1MiB", "--preset", "nope"}, "--preset"},
		{[]string{"--dir", "/x", "--bytes", "1MiB", "--batch", "3"}, "batch"},
	} {
		_, err := ParseGenArgs(tt.args)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("ParseGenArgs(%q) = %v, want a UsageError mentioning %q", tt.args, err, tt.wantMsg)
		}
	}
}

func TestUsage_ListsEveryPreset(t *testing.T) {
	u := Usage()
	for _, p := range Presets() {
		row := p.Name + " "
		if !strings.Contains(u, row) || !strings.Contains(u, p.GPUStep.String()) {
			t.Errorf("usage lacks preset %q with gpu-step %s", p.Name, p.GPUStep)
		}
	}
	for _, f := range []string{jobcontract.FlagBatch, jobcontract.FlagWorkers, jobcontract.FlagMaxIterations, FlagMaxIterAlias, jobcontract.FlagData, jobcontract.FlagSyntheticData, FlagPreset, FlagGPUStep, FlagPrefetch, FlagSeed} {
		if !strings.Contains(u, "--"+f) {
			t.Errorf("usage does not mention --%s", f)
		}
	}
}
