package synthtrain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// idCodec is a fake codec for loader logic: each file holds its id as text,
// and processing writes it into the sample's first element.
type idCodec struct{}

func (idCodec) generate(_ uint64, idx int) ([]byte, error) { return []byte(strconv.Itoa(idx)), nil }
func (idCodec) tensorLen() int                             { return 2 }
func (idCodec) process(data []byte, _ *rng, dst []float32) error {
	n, err := strconv.Atoi(string(data))
	if err != nil {
		return fmt.Errorf("bad id %q", data)
	}
	dst[0], dst[1] = float32(n), -1
	return nil
}

func idPreset() Preset { return Preset{Name: "id", Ext: ".id", codec: idCodec{}} }

// writeIDDataset writes files 0..n-1 spread over 3 classes.
func writeIDDataset(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		path := filepath.Join(root, SampleName(idPreset(), 3, i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Things the scan must skip.
	for _, p := range []string{ManifestName, ".hidden/x.id", "class_000/.x.id", "class_001/notes.txt"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type seen struct {
	index, epoch, samples int
	ids                   []int
}

func runLoader(t *testing.T, root string, batch, workers, prefetch, batches int, seed uint64) []seen {
	t.Helper()
	ds, err := ScanDataset(root, ".id")
	if err != nil {
		t.Fatal(err)
	}
	l, err := StartLoader(context.Background(), LoaderConfig{Dataset: ds, Preset: idPreset(), Batch: batch, Workers: workers, Prefetch: prefetch, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []seen
	for range batches {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Data) != 2*b.Samples {
			t.Fatalf("batch %d: %d floats for %d samples, want %d", b.Index, len(b.Data), b.Samples, 2*b.Samples)
		}
		s := seen{index: b.Index, epoch: b.Epoch, samples: b.Samples}
		for j := range b.Samples {
			s.ids = append(s.ids, int(b.Data[2*j]))
		}
		out = append(out, s)
		l.Release(b)
	}
	return out
}

func TestLoader_EpochsVisitEveryFileOnceInSeededOrder(t *testing.T) {
	const files, batch = 10, 4 // an epoch is batches of 4, 4, 2
	root := writeIDDataset(t, files)
	got := runLoader(t, root, batch, 3, 2, 9, 42)

	wantEpochs := []int{0, 0, 0, 1, 1, 1, 2, 2, 2}
	wantSamples := []int{4, 4, 2, 4, 4, 2, 4, 4, 2}
	var orders [3][]int
	for i, s := range got {
		if s.index != i || s.epoch != wantEpochs[i] || s.samples != wantSamples[i] {
			t.Errorf("batch %d: index %d epoch %d samples %d, want %d %d %d", i, s.index, s.epoch, s.samples, i, wantEpochs[i], wantSamples[i])
		}
		orders[s.epoch] = append(orders[s.epoch], s.ids...)
	}
	for e, order := range orders {
		sorted := slices.Sorted(slices.Values(order))
		if !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Errorf("epoch %d visited %v, want each of 0..9 once", e, order)
		}
	}
	if slices.Equal(orders[0], orders[1]) && slices.Equal(orders[1], orders[2]) {
		t.Errorf("three epochs in the same order %v: not shuffled per epoch", orders[0])
	}
	if slices.IsSorted(orders[0]) && slices.IsSorted(orders[1]) {
		t.Errorf("epochs in file order: not shuffled")
	}

	// The order depends on the seed only, not on worker scheduling.
	again := runLoader(t, root, batch, 1, 1, 9, 42)
	for i := range got {
		if !slices.Equal(got[i].ids, again[i].ids) {
			t.Errorf("batch %d: workers 3 gave %v, workers 1 gave %v", i, got[i].ids, again[i].ids)
		}
	}
	other := runLoader(t, root, batch, 2, 2, 3, 43)
	var o []int
	for _, s := range other {
		o = append(o, s.ids...)
	}
	if slices.Equal(o, orders[0]) {
		t.Errorf("seeds 42 and 43 gave the same first epoch %v", o)
	}
}

func TestLoader_BadFileNamesIt(t *testing.T) {
	root := writeIDDataset(t, 4)
	bad := filepath.Join(root, SampleName(idPreset(), 3, 2))
	if err := os.WriteFile(bad, []byte("not a number"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := ScanDataset(root, ".id")
	if err != nil {
		t.Fatal(err)
	}
	l, err := StartLoader(context.Background(), LoaderConfig{Dataset: ds, Preset: idPreset(), Batch: 4, Workers: 1, Prefetch: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Next(context.Background())
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "batch 0") {
		t.Errorf("Next = %v, want an error naming batch 0 and %s", err, bad)
	}
}

func TestScanDataset_Errors(t *testing.T) {
	empty := t.TempDir()
	if _, err := ScanDataset(empty, ".jpg"); err == nil || !strings.Contains(err.Error(), "no .jpg files") {
		t.Errorf("empty dir: %v, want 'no .jpg files'", err)
	}
	if _, err := ScanDataset(filepath.Join(empty, "missing"), ".jpg"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: %v, want an error naming it", err)
	}
	root := writeIDDataset(t, 5)
	ds, err := ScanDataset(root, ".ID") // extension match is case-insensitive
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Files) != 5 || ds.Bytes != 5 {
		t.Errorf("scan: %d files, %d bytes, want 5 and 5 (hidden, top-level and other files skipped): %v", len(ds.Files), ds.Bytes, ds.Files)
	}
}

func TestStartLoader_Validates(t *testing.T) {
	ds := Dataset{Root: "/d", Files: []string{"a/b.id"}}
	for _, cfg := range []LoaderConfig{
		{Dataset: ds, Preset: idPreset(), Batch: 0, Workers: 1, Prefetch: 1},
		{Dataset: ds, Preset: idPreset(), Batch: 1, Workers: 0, Prefetch: 1},
		{Dataset: ds, Preset: idPreset(), Batch: 1, Workers: 1, Prefetch: 0},
		{Dataset: Dataset{Root: "/d"}, Preset: idPreset(), Batch: 1, Workers: 1, Prefetch: 1},
	} {
		if l, err := StartLoader(context.Background(), cfg); err == nil {
			l.Close()
			t.Errorf("StartLoader(%+v) succeeded, want an error", cfg)
		}
	}
}

// wantIDs is the ids of the files in the order the seeded epochs visit
// them, epochs 0..epochs-1 concatenated.
func wantIDs(t *testing.T, ds Dataset, seed uint64, epochs int) []int {
	t.Helper()
	var ids []int
	for e := range epochs {
		for _, fi := range epochOrder(len(ds.Files), seed, e) {
			b, err := os.ReadFile(filepath.Join(ds.Root, ds.Files[fi]))
			if err != nil {
				t.Fatal(err)
			}
			id, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

// waitRunning waits until n worker goroutines run (a guard against
// hanging, not a timing check).
func waitRunning(t *testing.T, l *Loader, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for int(l.running.Load()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d worker goroutines running after 10s, want %d", l.running.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLoader_SetWorkersMidPassKeepsEveryBatchInOrder(t *testing.T) {
	const files, batch, seed = 30, 2, 7 // 15 batches a pass
	root := writeIDDataset(t, files)
	ds, err := ScanDataset(root, ".id")
	if err != nil {
		t.Fatal(err)
	}
	l, err := StartLoader(context.Background(), LoaderConfig{Dataset: ds, Preset: idPreset(), Batch: batch, Workers: 2, PrefetchPerWorker: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitRunning(t, l, 2)

	var ids, gens []int
	take := func(n int) {
		for range n {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if b.Index != len(gens) {
				t.Fatalf("batch index %d, want %d", b.Index, len(gens))
			}
			for j := range b.Samples {
				ids = append(ids, int(b.Data[2*j]))
			}
			gens = append(gens, b.gen)
			l.Release(b)
		}
	}
	// Workers 2 -> 1 -> 3 mid-pass, then past the end of the pass: later
	// epochs use the last count.
	take(3)
	if gen, err := l.SetWorkers(1); err != nil || gen != 1 {
		t.Fatalf("SetWorkers(1) = %d, %v; want generation 1", gen, err)
	}
	waitRunning(t, l, 1)
	take(4)
	if gen, err := l.SetWorkers(3); err != nil || gen != 2 {
		t.Fatalf("SetWorkers(3) = %d, %v; want generation 2", gen, err)
	}
	waitRunning(t, l, 3)
	if gen, err := l.SetWorkers(3); err != nil || gen != 2 {
		t.Errorf("SetWorkers(3) again = %d, %v; want generation 2 kept", gen, err)
	}
	take(2*15 - 7)
	waitRunning(t, l, 3)
	if l.Workers() != 3 {
		t.Errorf("Workers() = %d, want 3", l.Workers())
	}

	if want := wantIDs(t, ds, seed, 2); !slices.Equal(ids, want) {
		t.Errorf("two passes gave\n%v\nwant each file once a pass in the seeded order\n%v", ids, want)
	}
	// Batches prefetched by an old set come first, then the new set's.
	if !slices.IsSorted(gens) || gens[0] != 0 || gens[len(gens)-1] != 2 {
		t.Errorf("generations %v: want non-decreasing from 0 to 2", gens)
	}
	for _, bad := range []int{0, -1, MaxWorkers + 1} {
		if _, err := l.SetWorkers(bad); err == nil {
			t.Errorf("SetWorkers(%d) succeeded", bad)
		}
	}
}

// gateCodec is idCodec whose process blocks until gate is closed,
// counting the calls in progress.
type gateCodec struct {
	idCodec
	active *atomic.Int32
	gate   chan struct{}
}

func (c gateCodec) process(data []byte, r *rng, dst []float32) error {
	c.active.Add(1)
	defer c.active.Add(-1)
	<-c.gate
	return c.idCodec.process(data, r, dst)
}

// More workers build more batches at once: the queue's bound follows the
// count, and an old worker finishes the batch it holds before it exits.
func TestLoader_SetWorkersRunsTheNewSetInParallel(t *testing.T) {
	root := writeIDDataset(t, 12)
	ds, err := ScanDataset(root, ".id")
	if err != nil {
		t.Fatal(err)
	}
	var active atomic.Int32
	codec := gateCodec{active: &active, gate: make(chan struct{})}
	p := idPreset()
	p.codec = codec
	l, err := StartLoader(context.Background(), LoaderConfig{Dataset: ds, Preset: p, Batch: 1, Workers: 1, PrefetchPerWorker: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitActive := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for int(active.Load()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d samples in progress after 10s, want %d", active.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitActive(1) // one worker, one batch in flight
	time.Sleep(20 * time.Millisecond)
	if n := active.Load(); n != 1 {
		t.Fatalf("%d samples in progress with 1 worker and prefetch 1, want 1", n)
	}
	if _, err := l.SetWorkers(3); err != nil {
		t.Fatal(err)
	}
	// The old worker still holds batch 0; the queue's bound is now 3
	// batches, so two new workers take batches 1 and 2 and the third waits.
	waitActive(3)
	waitRunning(t, l, 4)
	close(codec.gate)
	waitRunning(t, l, 3)
	var ids []int
	for range 12 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int(b.Data[0]))
		l.Release(b)
	}
	if want := wantIDs(t, ds, 3, 1); !slices.Equal(ids, want) {
		t.Errorf("pass gave %v, want %v", ids, want)
	}
}
