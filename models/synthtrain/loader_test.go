package synthtrain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
