package profiler

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

func writeVictim(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(v, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

func checkVictim(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "precious\n" {
		t.Errorf("victim %s holds %q (%v), want it untouched", v, b, err)
	}
}

// Whoever can write the output directory plants a symlink (and a hard
// link) at every log and timeline file a point will write: each target
// keeps its content, and the point's files are made afresh.
func TestRun_PlantedLinksInTheOutputDirAreNotFollowed(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	cfg.CPUs, cfg.MemLimits = []float64{1}, nil
	stem := strings.TrimSuffix(cfg.Out, ".json")
	cfg.LogDir, cfg.TimelineDir = stem+".logs", stem+".timeline"
	for _, d := range []string{cfg.LogDir, cfg.TimelineDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	label := point{cpus: 1}.fileLabel()
	sym, hard := writeVictim(t), writeVictim(t)
	plants := map[string]string{
		filepath.Join(cfg.LogDir, label+".log"):                sym,
		filepath.Join(cfg.TimelineDir, label+".samples.jsonl"): sym,
		filepath.Join(cfg.TimelineDir, label+".metrics.jsonl"): hard,
	}
	for at, v := range plants {
		var err error
		if v == hard {
			err = os.Link(v, at)
		} else {
			err = os.Symlink(v, at)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	checkVictim(t, sym)
	checkVictim(t, hard)
	for at := range plants {
		if strings.HasSuffix(at, ".samples.jsonl") {
			continue // no sampler in this test: nothing made there
		}
		st, err := os.Lstat(at)
		if err != nil || !st.Mode().IsRegular() || os.SameFile(st, mustStat(t, hard)) {
			t.Errorf("%s: %v (%v), want a file of this run's", at, st, err)
		}
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A symlink planted where OUT.logs goes is refused, not followed.
func TestRun_SymlinkedLogDirIsRefused(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	cfg.CPUs, cfg.MemLimits = []float64{1}, nil
	elsewhere := t.TempDir()
	cfg.LogDir = strings.TrimSuffix(cfg.Out, ".json") + ".logs"
	if err := os.Symlink(elsewhere, cfg.LogDir); err != nil {
		t.Fatal(err)
	}
	_, err := run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), cfg.LogDir) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Run with a symlinked log dir: %v, want a refusal naming it", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("wrote %d file(s) through the symlink", len(ents))
	}
	if fr.started != 0 {
		t.Errorf("%d job(s) started", fr.started)
	}
}

// The timeline's copy of the metrics stream leaves out over-long lines and
// stops at its bound.
func TestCopyMetricLines_Bounded(t *testing.T) {
	good := `{"iter":0}` + "\n"
	long := strings.Repeat("x", jobcontract.MaxLineBytes+1) + "\n"
	in := good + long + good + strings.Repeat("y", 3*jobcontract.MaxLineBytes) // unterminated and long
	var out bytes.Buffer
	n, full, err := copyMetricLines(&out, strings.NewReader(in), 1<<20)
	if err != nil || n != 2 || full || out.String() != good+good {
		t.Errorf("copy: %d long, full %v, %v, %d bytes out; want the two good lines only", n, full, err, out.Len())
	}
	exact := strings.Repeat("z", jobcontract.MaxLineBytes) + "\n"
	out.Reset()
	if n, _, _ := copyMetricLines(&out, strings.NewReader(exact), 1<<20); n != 0 || out.String() != exact {
		t.Errorf("a line of exactly %d bytes: %d dropped, %d copied", jobcontract.MaxLineBytes, n, out.Len())
	}
	out.Reset()
	_, full, _ = copyMetricLines(&out, strings.NewReader(strings.Repeat(good, 100)), int64(10*len(good)+3))
	if !full || out.Len() != 10*len(good) {
		t.Errorf("bounded copy: full %v, %d bytes; want whole lines up to the bound", full, out.Len())
	}
}

// A job that reports 2e9 samples an iteration gets a failed point carrying
// the reader's message, never a profile its readers refuse.
func TestRun_SavesOnlyWhatTheReaderAccepts(t *testing.T) {
	var n atomic.Int64
	absurd := func(runner.Limits) string {
		i := n.Add(1)
		return fmt.Sprintf(`{"iter":%d,"samples":2000000000,"data_wait_s":0.001,"step_s":0.01,"ts":%f}`, i, 1.7e9+float64(i)*0.01)
	}
	fr := &fakeRunner{rate: trueRate, garbage: absurd}
	cfg := baseConfig(t, fr)
	cfg.CPUs, cfg.MemLimits = []float64{1, 2}, nil
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		if !c.Measured {
			continue
		}
		if c.Failure == nil || c.Failure.Class != sensitivity.FailMalformedMetrics || !strings.Contains(c.Failure.Message, "samples_per_s") || !strings.Contains(c.Failure.Message, "1e+09") {
			t.Errorf("cell %v: failure %+v, want malformed_metrics quoting the reader's bound", c.CPUs, c.Failure)
		}
		if c.SamplesPerS != 0 {
			t.Errorf("cell %v keeps %v samples/s", c.CPUs, c.SamplesPerS)
		}
	}
	if _, err := sensitivity.Load(cfg.Out); err != nil {
		t.Errorf("the saved profile is refused by its reader: %v", err)
	}
}

// A file hashed for the profile's identity is read only while it is a
// regular file: a FIFO (swapped in after the listing) is refused at once,
// a dataset file's symlink is not followed, a script named through a
// symlink (python3 -> python3.12) still is.
func TestOpenRegularFile_RefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo, link, file := filepath.Join(dir, "fifo"), filepath.Join(dir, "link"), filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Symlink(file, link)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := openRegularFile(fifo, 0); err == nil {
			f.Close()
			t.Error("opened a FIFO")
		}
		if f, err := openRegularFile(link, syscall.O_NOFOLLOW); err == nil {
			f.Close()
			t.Error("followed a dataset file's symlink")
		}
		f, err := openRegularFile(link, 0)
		if err != nil {
			t.Errorf("a script through a symlink: %v", err)
			return
		}
		f.Close()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked opening a FIFO")
	}
}

// A job naming as its emulated GPU what the reader refuses as a type name
// gets a profile without gpu.type, which its readers accept.
func TestRun_RefusedEmulatedGPUTypeIsLeftOut(t *testing.T) {
	var n atomic.Int64
	line := func(runner.Limits) string {
		i := n.Add(1)
		return fmt.Sprintf(`{"iter":%d,"samples":4,"data_wait_s":0.001,"step_s":0.01,"ts":%f,"emulated":true,"emulated_gpu":"a \u001b[2J b"}`, i, 1.7e9+float64(i)*0.04)
	}
	fr := &fakeRunner{rate: trueRate, garbage: line}
	cfg := baseConfig(t, fr)
	cfg.CPUs, cfg.MemLimits = []float64{1, 2}, nil
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.GPU.Type != "" || len(p.MeasuredOK()) != 2 || !strings.Contains(strings.Join(p.Warnings, "\n"), "gpu.type left empty: gpu.type") {
		t.Errorf("gpu.type = %q, %d points measured, warnings %q; want both measured and the type left out, saying why", p.GPU.Type, len(p.MeasuredOK()), p.Warnings)
	}
	if _, err := sensitivity.Load(cfg.Out); err != nil {
		t.Errorf("the saved profile is refused by its reader: %v", err)
	}
}
