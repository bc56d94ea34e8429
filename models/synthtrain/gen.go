package synthtrain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/synergy-sched/synergy/internal/atomicfile"
)

// ManifestName is the file gen writes last at the dataset's top level. Its
// presence means the dataset is complete; loaders skip top-level files.
const ManifestName = "MANIFEST.json"

// GenConfig describes a dataset to generate.
type GenConfig struct {
	// Dir is created if missing; it must be empty, or hold a complete
	// dataset made with the same Preset, Seed, Classes and Bytes (then gen
	// does nothing).
	Dir    string
	Preset Preset
	// Bytes is the target total size; gen stops at the first file that
	// reaches it, so it overshoots by less than one sample.
	Bytes   int64
	Seed    uint64
	Classes int
	// Workers encode samples in parallel; the output does not depend on it.
	Workers int
}

// Manifest records what gen made. It holds no timestamps so that two runs
// with the same arguments write identical trees.
type Manifest struct {
	Generator      string `json:"generator"`
	Preset         string `json:"preset"`
	Seed           uint64 `json:"seed"`
	Classes        int    `json:"classes"`
	RequestedBytes int64  `json:"requested_bytes"`
	Files          int    `json:"files"`
	Bytes          int64  `json:"bytes"`
}

// GenResult is what Generate did.
type GenResult struct {
	Manifest Manifest
	// Reused is true when Dir already held this dataset.
	Reused  bool
	Elapsed time.Duration
}

// SampleName is the path, relative to the dataset root, of sample idx:
// class_<idx mod classes>/<preset>_<idx><ext>.
func SampleName(p Preset, classes, idx int) string {
	return filepath.Join(fmt.Sprintf("class_%03d", idx%classes), fmt.Sprintf("%s_%07d%s", p.Name, idx, p.Ext))
}

// Generate writes a seeded dataset: the same config gives byte-identical
// files whatever the number of workers. A directory that already holds the
// same dataset is reused.
func Generate(ctx context.Context, cfg GenConfig) (GenResult, error) {
	start := time.Now()
	want := Manifest{Generator: "synthtrain", Preset: cfg.Preset.Name, Seed: cfg.Seed, Classes: cfg.Classes, RequestedBytes: cfg.Bytes}
	switch {
	case cfg.Preset.codec == nil:
		return GenResult{}, errors.New("generate: no preset")
	case cfg.Bytes <= 0:
		return GenResult{}, fmt.Errorf("generate: size %d must be > 0", cfg.Bytes)
	case cfg.Classes < 1:
		return GenResult{}, fmt.Errorf("generate: classes %d must be >= 1", cfg.Classes)
	}
	m, reused, err := reuseDir(cfg.Dir, want)
	if err != nil {
		return GenResult{}, err
	}
	if reused {
		return GenResult{Manifest: m, Reused: true, Elapsed: time.Since(start)}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	queue, wait := encode(ctx, cfg)
	defer func() { cancel(); wait() }()
	if m, err = writeSamples(ctx, cfg, queue, want); err != nil {
		return GenResult{}, err
	}
	cancel()
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return GenResult{}, fmt.Errorf("generate: manifest: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(cfg.Dir, ManifestName), append(js, '\n'), 0o644); err != nil {
		return GenResult{}, fmt.Errorf("generate: %w", err)
	}
	return GenResult{Manifest: m, Elapsed: time.Since(start)}, nil
}

// reuseDir makes dir if needed and checks that it is empty, or holds the
// dataset want describes (reused: true, with its manifest).
func reuseDir(dir string, want Manifest) (m Manifest, reused bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return m, false, fmt.Errorf("generate: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return m, false, fmt.Errorf("generate: list %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return m, false, nil
	}
	if m, err := readManifest(dir); err == nil && sameRequest(m, want) {
		return m, true, nil
	}
	return m, false, fmt.Errorf("generate: %s is not empty and holds no dataset made with these arguments; remove it or pick another directory", dir)
}

// encoded is one generated sample file, or why it could not be made.
type encoded struct {
	data []byte
	err  error
}

// encode generates samples 0, 1, 2, ... on cfg.Workers goroutines until ctx
// is done. The queue yields one future per sample in index order; its
// capacity bounds the samples held in memory ahead of the writer. wait
// returns once every goroutine has ended (after ctx is done).
func encode(ctx context.Context, cfg GenConfig) (queue <-chan chan encoded, wait func()) {
	workers := max(cfg.Workers, 1)
	q := make(chan chan encoded, 2*workers)
	type job struct {
		idx int
		out chan encoded
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for idx := 0; ; idx++ {
			out := make(chan encoded, 1)
			select {
			case q <- out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{idx, out}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for j := range jobs {
				data, err := cfg.Preset.codec.generate(cfg.Seed, j.idx)
				j.out <- encoded{data, err}
			}
		}()
	}
	return q, wg.Wait
}

// writeSamples writes the queue's samples in order until the dataset
// reaches cfg.Bytes, and returns m with the files and bytes written.
func writeSamples(ctx context.Context, cfg GenConfig, queue <-chan chan encoded, m Manifest) (Manifest, error) {
	for m.Bytes < cfg.Bytes {
		var r encoded
		select {
		case out := <-queue:
			r = <-out
		case <-ctx.Done():
			return m, fmt.Errorf("generate: %w", ctx.Err())
		}
		if r.err != nil {
			return m, fmt.Errorf("generate: sample %d: %w", m.Files, r.err)
		}
		path := filepath.Join(cfg.Dir, SampleName(cfg.Preset, cfg.Classes, m.Files))
		if m.Files < cfg.Classes {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return m, fmt.Errorf("generate: %w", err)
			}
		}
		if err := os.WriteFile(path, r.data, 0o644); err != nil {
			return m, fmt.Errorf("generate: %w", err)
		}
		m.Files++
		m.Bytes += int64(len(r.data))
	}
	return m, nil
}

func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestName, err)
	}
	return m, nil
}

func sameRequest(have, want Manifest) bool {
	return have.Generator == want.Generator && have.Preset == want.Preset && have.Seed == want.Seed &&
		have.Classes == want.Classes && have.RequestedBytes == want.RequestedBytes && have.Files > 0
}
