package synthtrain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image/jpeg"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// treeHash hashes every file's relative path and contents, in walk order.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(rel + "\x00"))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func mustPreset(t testing.TB, name string) Preset {
	t.Helper()
	p, err := LookupPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func generate(t testing.TB, cfg GenConfig) GenResult {
	t.Helper()
	res, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatalf("generate %+v: %v", cfg, err)
	}
	return res
}

func TestGenerate_ReproducibleAndLaidOut(t *testing.T) {
	tests := []struct {
		preset  string
		bytes   int64
		classes int
		// maxSample bounds one file, so the total overshoots by less.
		maxSample int64
	}{
		{"image", 600 << 10, 3, 200 << 10},
		{"audio", 5 << 20, 2, audioMaxBytes},
		{"language", 96 << 10, 4, 2 * langMaxTokens},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			p := mustPreset(t, tt.preset)
			base := t.TempDir()
			cfg := GenConfig{Preset: p, Bytes: tt.bytes, Seed: 7, Classes: tt.classes}
			a, b, c := cfg, cfg, cfg
			a.Dir, a.Workers = filepath.Join(base, "a"), 1
			b.Dir, b.Workers = filepath.Join(base, "b"), 3 // parallelism must not change the output
			c.Dir, c.Workers, c.Seed = filepath.Join(base, "c"), 2, 8
			ra, rb := generate(t, a), generate(t, b)
			generate(t, c)

			if ha, hb := treeHash(t, a.Dir), treeHash(t, b.Dir); ha != hb {
				t.Errorf("same seed, workers 1 vs 3: tree hashes differ: %s vs %s", ha, hb)
			}
			if ha, hc := treeHash(t, a.Dir), treeHash(t, c.Dir); ha == hc {
				t.Errorf("seeds 7 and 8 gave identical trees")
			}
			if ra.Manifest != rb.Manifest {
				t.Errorf("manifests differ: %+v vs %+v", ra.Manifest, rb.Manifest)
			}
			m := ra.Manifest
			if m.Bytes < tt.bytes || m.Bytes >= tt.bytes+tt.maxSample {
				t.Errorf("total %d bytes, want in [%d, %d)", m.Bytes, tt.bytes, tt.bytes+tt.maxSample)
			}

			ds, err := ScanDataset(a.Dir, p.Ext)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Files) != m.Files || ds.Bytes != m.Bytes {
				t.Errorf("scan found %d files, %d bytes; manifest says %d, %d", len(ds.Files), ds.Bytes, m.Files, m.Bytes)
			}
			nameRE := regexp.MustCompile(`^class_(\d{3})/` + p.Name + `_(\d{7})\` + p.Ext + `$`)
			classes := map[string]bool{}
			for _, f := range ds.Files {
				sub := nameRE.FindStringSubmatch(filepath.ToSlash(f))
				if sub == nil {
					t.Fatalf("file %q does not match %s", f, nameRE)
				}
				classes[sub[1]] = true
			}
			if want := min(tt.classes, m.Files); len(classes) != want {
				t.Errorf("%d class directories, want %d", len(classes), want)
			}
			checkSamples(t, p, ds)
		})
	}
}

// checkSamples checks that every generated file is a valid sample of its
// kind, and that the loader's processing accepts it.
func checkSamples(t *testing.T, p Preset, ds Dataset) {
	t.Helper()
	dst := make([]float32, p.codec.tensorLen())
	for i, f := range ds.Files {
		b, err := os.ReadFile(filepath.Join(ds.Root, f))
		if err != nil {
			t.Fatal(err)
		}
		switch p.Name {
		case "image":
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: not a JPEG: %v", f, err)
			}
			if cfg.Width != imageWidth || cfg.Height != imageHeight {
				t.Errorf("%s: %dx%d, want %dx%d", f, cfg.Width, cfg.Height, imageWidth, imageHeight)
			}
		case "audio":
			if len(b) < audioMinBytes-1 || len(b) > audioMaxBytes {
				t.Errorf("%s: %d bytes, want 1-2 MiB", f, len(b))
			}
		case "language":
			if n := len(b) / 2; n < langMinTokens || n > langMaxTokens {
				t.Errorf("%s: %d tokens, want %d-%d", f, n, langMinTokens, langMaxTokens)
			}
		}
		r := newRNG(1, uint64(i))
		if err := p.codec.process(b, &r, dst); err != nil {
			t.Errorf("%s: process: %v", f, err)
		}
	}
}

func TestGenerate_ExistingDirectory(t *testing.T) {
	p := mustPreset(t, "language")
	dir := t.TempDir()
	cfg := GenConfig{Dir: dir, Preset: p, Bytes: 32 << 10, Seed: 1, Classes: 2, Workers: 2}
	first := generate(t, cfg)
	if first.Reused {
		t.Fatal("first run says reused")
	}
	again := generate(t, cfg)
	if !again.Reused || again.Manifest != first.Manifest {
		t.Errorf("same arguments again: reused=%v manifest %+v, want reused and %+v", again.Reused, again.Manifest, first.Manifest)
	}
	other := cfg
	other.Seed = 2
	if _, err := Generate(context.Background(), other); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("other seed into the same dir: err %v, want 'not empty'", err)
	}
	stray := t.TempDir()
	if err := os.WriteFile(filepath.Join(stray, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = stray
	if _, err := Generate(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("dir with a stray file: err %v, want 'not empty'", err)
	}
}
