package synthtrain

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// appendLine appends raw text to the command file, as the profiler does
// (jobcontract.AppendControl for well-formed commands).
func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// readAcks parses every line of the answer file.
func readAcks(t *testing.T, path string) []jobcontract.ControlAck {
	t.Helper()
	lines, err := jobcontract.NewLineReader(path).Next()
	if err != nil {
		t.Fatal(err)
	}
	var acks []jobcontract.ControlAck
	for _, l := range lines {
		a, err := jobcontract.ParseAck(l)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, a)
	}
	return acks
}

func controlFiles(t *testing.T) Control {
	dir := t.TempDir()
	return Control{CommandFile: filepath.Join(dir, "control.jsonl"), AckFile: filepath.Join(dir, "control-ack.jsonl")}
}

// fakeKnobs is a loader's worker count and generation.
type fakeKnobs struct{ n, g int }

var _ knobs = (*fakeKnobs)(nil)

func (f *fakeKnobs) setWorkers(n int) (int, error) {
	if n > MaxWorkers {
		return 0, errors.New("too many")
	}
	if n != f.n {
		f.n, f.g = n, f.g+1
	}
	return f.g, nil
}
func (f *fakeKnobs) workers() int { return f.n }
func (f *fakeKnobs) gen() int     { return f.g }

func TestController_AnswersInOrderAtTheFirstBatchUnderTheNewSettings(t *testing.T) {
	cfg := controlFiles(t)
	k := &fakeKnobs{n: 2}
	c := newController(cfg, k)
	at := func(i int) time.Time { return time.Unix(1_700_000_000+int64(i), 0) }
	deliver := func(iter, gen int, replayed bool) {
		t.Helper()
		if err := c.delivered(Batch{gen: gen}, replayed, at(iter), iter); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(iter int, lines ...string) {
		t.Helper()
		for _, l := range lines {
			appendLine(t, cfg.CommandFile, l)
		}
		if err := c.poll(iter); err != nil {
			t.Fatal(err)
		}
	}

	poll(0, `{"seq":1,"workers":4}`) // before the first batch: not read yet
	if k.n != 2 {
		t.Fatalf("a command applied before the hello: workers %d", k.n)
	}
	deliver(0, 0, false) // hello
	poll(1)              // reads seq 1: workers 4, generation 1
	deliver(1, 0, false) // prefetched by the old set: no answer
	poll(2)
	deliver(2, 1, false) // the new set's first batch: answer seq 1
	poll(3, `{"seq":2,"replay":true}`, `{bogus`, `{"seq":3,"workers":-1}`, `{"seq":4,"workers":0}`,
		`{"seq":5,"frob":1}`, `{"seq":6,"workers":2000}`)
	deliver(3, 1, true) // the first replayed batch: answer seq 2
	// Two at once: seq 7's settings are never delivered (replay is off by
	// seq 8), so it is answered with seq 8.
	poll(4, `{"seq":7,"workers":1}`, `{"seq":8,"replay":false,"workers":2}`)
	deliver(4, 1, false) // still the old set's
	deliver(5, 3, false)
	poll(6, `{"seq":9,"workers":2}`) // the same count: the next batch
	deliver(6, 3, false)

	type want struct {
		seq, workers, iter int
		replay             bool
		err                string // in Error; "" none
	}
	wants := []want{
		{0, 2, 0, false, ""},
		{1, 4, 2, false, ""},
		// Answered at once, with the settings in force (replay, from seq 2).
		{0, 4, 3, true, "control line"}, // {bogus: no seq to take
		{3, 4, 3, true, "workers -1"},
		{4, 4, 3, true, "workers 0"},
		{5, 4, 3, true, "frob"},
		{6, 4, 3, true, "too many"},
		{2, 4, 3, true, ""},
		{7, 1, 5, true, ""},
		{8, 2, 5, false, ""},
		{9, 2, 6, false, ""},
	}
	acks := readAcks(t, cfg.AckFile)
	if len(acks) != len(wants) {
		t.Fatalf("%d answers, want %d: %+v", len(acks), len(wants), acks)
	}
	for i, w := range wants {
		a := acks[i]
		if a.Seq != w.seq || a.Workers != w.workers || a.Iter != w.iter || a.Replay != w.replay ||
			(w.err == "") != (a.Error == "") || !strings.Contains(a.Error, w.err) {
			t.Errorf("answer %d: %+v, want seq %d workers %d iter %d replay %v error containing %q", i, a, w.seq, w.workers, w.iter, w.replay, w.err)
		}
		if w.err == "" && a.TS != unixSeconds(at(w.iter)) {
			t.Errorf("answer %d: ts %.6f, want the delivery of iteration %d, %.6f", i, a.TS, w.iter, unixSeconds(at(w.iter)))
		}
	}
	if k.n != 2 || k.g != 3 {
		t.Errorf("knobs after: workers %d generation %d, want 2 and 3 (bad commands change nothing)", k.n, k.g)
	}
}

// scriptSource hands out batches whose Samples is index+1, so the metrics
// stream shows which batch each iteration consumed. A batch is stamped
// with the generation in force at the call before (one batch prefetched).
type scriptSource struct {
	k                 *fakeKnobs
	nexts, nextGen    int
	releasedAfterNext map[int]int // batch index -> Next calls done when released
}

func (s *scriptSource) Next(ctx context.Context) (Batch, error) {
	b := Batch{Index: s.nexts, Samples: s.nexts + 1, gen: s.nextGen}
	s.nexts++
	s.nextGen = s.k.g
	return b, ctx.Err()
}
func (s *scriptSource) Release(b Batch) { s.releasedAfterNext[b.Index] = s.nexts }
func (s *scriptSource) Close()          {}

// scriptWriter appends the script's command after the metrics line of an
// iteration, so commands arrive at fixed iterations.
type scriptWriter struct {
	t      *testing.T
	path   string
	script map[int]string
	lines  []jobcontract.Iteration
}

func (w *scriptWriter) Write(p []byte) (int, error) {
	it, err := jobcontract.ParseIteration(p)
	if err != nil {
		return 0, err
	}
	w.lines = append(w.lines, it)
	if cmd, ok := w.script[it.Iter]; ok {
		appendLine(w.t, w.path, cmd)
	}
	return len(p), nil
}

func TestLoop_ReplayHandsTheLastBatchAgainWithTheLoaderIdle(t *testing.T) {
	cfg := controlFiles(t)
	k := &fakeKnobs{n: 2}
	src := &scriptSource{k: k, releasedAfterNext: map[int]int{}}
	w := &scriptWriter{t: t, path: cfg.CommandFile, script: map[int]string{
		2: `{"seq":1,"replay":true}`,  // read before iteration 3
		5: `{"seq":2,"replay":false}`, // before 6
		7: `{"seq":3,"workers":3}`,    // before 8; the new set's first batch is at 9
	}}
	var sum Summary
	if err := loop(context.Background(), TrainConfig{MaxIterations: 12}, src, newController(cfg, k), w, &sum); err != nil {
		t.Fatal(err)
	}
	// iteration:  0 1 2 3 4 5 6 7 8 9 10 11
	// batch:      0 1 2 2 2 2 3 4 5 6 7  8
	wantSamples := []int{1, 2, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9}
	if len(w.lines) != len(wantSamples) {
		t.Fatalf("%d metrics lines, want %d", len(w.lines), len(wantSamples))
	}
	for i, it := range w.lines {
		if it.Iter != i || it.Samples != wantSamples[i] {
			t.Errorf("line %d: iter %d samples %d, want %d %d (batch %d)", i, it.Iter, it.Samples, i, wantSamples[i], wantSamples[i]-1)
		}
	}
	if src.nexts != 9 || sum.Iterations != 12 {
		t.Errorf("%d batches asked of the loader, %d iterations; want 9 (none while replaying) and 12", src.nexts, sum.Iterations)
	}
	// A batch goes back to the loader when the next one arrives: batch 2
	// was held through the replay.
	for idx, n := range src.releasedAfterNext {
		if n != idx+2 {
			t.Errorf("batch %d released after %d loader batches, want %d", idx, n, idx+2)
		}
	}
	type want struct {
		seq, workers, iter int
		replay             bool
	}
	wants := []want{{0, 2, 0, false}, {1, 2, 3, true}, {2, 2, 6, false}, {3, 3, 9, false}}
	acks := readAcks(t, cfg.AckFile)
	if len(acks) != len(wants) {
		t.Fatalf("answers %+v, want %d", acks, len(wants))
	}
	for i, wa := range wants {
		a := acks[i]
		if a.Seq != wa.seq || a.Workers != wa.workers || a.Iter != wa.iter || a.Replay != wa.replay || a.Error != "" {
			t.Errorf("answer %d: %+v, want %+v", i, a, wa)
		}
		// The batch reached the loop after the previous iteration ended
		// and before its own ended.
		if a.TS > w.lines[a.Iter].TS || (a.Iter > 0 && a.TS < w.lines[a.Iter-1].TS) {
			t.Errorf("answer %d: ts %.6f not within iteration %d's [%.6f, %.6f]", i, a.TS, a.Iter, w.lines[max(a.Iter-1, 0)].TS, w.lines[a.Iter].TS)
		}
	}
}

// waitAck waits until the answer file holds an answer to seq (a guard
// against hanging, not a timing check).
func waitAck(t *testing.T, path string, seq int) jobcontract.ControlAck {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			for _, a := range readAcks(t, path) {
				if a.Seq == seq {
					return a
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer to command %d after 30s", seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The real loader under Train: commands appended while it runs change its
// workers in the running pass; answers match the metrics stream.
func TestTrain_ControlChannelChangesTheRunningLoader(t *testing.T) {
	root := writeIDDataset(t, 40)
	cfg := controlFiles(t)
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	mf, err := os.Create(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tc := TrainConfig{Preset: idPreset(), Batch: 2, Workers: 2, Prefetch: 4, PrefetchPerWorker: 2,
		GPUStep: 2 * time.Millisecond, Data: root, Seed: 5, Control: &cfg}
	var onWorkers []int
	cfg.OnWorkers = func(n int) { onWorkers = append(onWorkers, n) }
	done := make(chan error, 1)
	go func() {
		_, err := Train(ctx, tc, mf)
		done <- err
	}()
	hello := waitAck(t, cfg.AckFile, 0)
	if hello.Workers != 2 || hello.Iter != 0 || hello.Error != "" {
		t.Errorf("hello %+v, want workers 2 at iteration 0", hello)
	}
	for _, c := range []struct {
		seq     int
		line    string
		workers int
		replay  bool
		err     string
	}{
		{1, `{"seq":1,"workers":1}`, 1, false, ""},
		{2, `{"seq":2,"replay":true}`, 1, true, ""},
		{3, `{"seq":3,"replay":false,"workers":3}`, 3, false, ""},
		{4, `{"seq":4,"workers":"many"}`, 3, false, "workers"},
		{5, `{"seq":5}`, 3, false, ""}, // goes on after the bad one
	} {
		appendLine(t, cfg.CommandFile, c.line)
		a := waitAck(t, cfg.AckFile, c.seq)
		if a.Workers != c.workers || a.Replay != c.replay || (c.err == "") != (a.Error == "") || !strings.Contains(a.Error, c.err) {
			t.Errorf("answer to %s: %+v, want workers %d replay %v error containing %q", c.line, a, c.workers, c.replay, c.err)
		}
	}
	// An answer is written when its batch reaches the loop, before the
	// iteration's line: wait for the last answer's line.
	last := waitAck(t, cfg.AckFile, 5)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(metrics); bytes.Count(b, []byte("\n")) > last.Iter {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line for iteration %d after 30s", last.Iter)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Train = %v, want context.Canceled", err)
	}
	if len(onWorkers) != 2 || onWorkers[0] != 1 || onWorkers[1] != 3 {
		t.Errorf("OnWorkers calls %v, want [1 3]", onWorkers)
	}
	its := readMetrics(t, metrics)
	acks := readAcks(t, cfg.AckFile)
	hellos := 0
	for i, a := range acks {
		if a.Seq == 0 {
			hellos++
		}
		if i > 0 && a.TS < acks[i-1].TS {
			t.Errorf("answer %d: ts %.6f before the previous answer's %.6f", i, a.TS, acks[i-1].TS)
		}
		if a.Error != "" {
			continue
		}
		if a.Iter >= len(its) || a.TS > its[a.Iter].TS || (a.Iter > 0 && a.TS < its[a.Iter-1].TS) {
			t.Errorf("answer %+v: not within its iteration of the stream", a)
		}
	}
	if hellos != 1 {
		t.Errorf("%d hellos, want 1", hellos)
	}
}

// With the channel on, --max-iterations still ends the run with success.
func TestMain_ControlChannelKeepsMaxIterations(t *testing.T) {
	cfg := controlFiles(t)
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	code, _, stderr := runMain(t, map[string]string{jobcontract.EnvMetricsFile: metrics,
		jobcontract.EnvControlFile: cfg.CommandFile, jobcontract.EnvControlAckFile: cfg.AckFile},
		"--synthetic-data", "--gpu-step", "1ms", "--max-iterations", "5")
	if code != 0 || !strings.Contains(stderr, "control=true") {
		t.Fatalf("exit %d, stderr %q; want 0 and control=true", code, stderr)
	}
	if n := len(readMetrics(t, metrics)); n != 5 {
		t.Errorf("%d metrics lines, want 5", n)
	}
	if acks := readAcks(t, cfg.AckFile); len(acks) != 1 || acks[0].Seq != 0 || acks[0].Workers != 0 {
		t.Errorf("answers %+v, want one hello with workers 0 (synthetic data: no loader)", acks)
	}
}
