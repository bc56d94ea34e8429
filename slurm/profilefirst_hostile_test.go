package slurm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A symlink planted at the batch script's name in a shared cache directory
// is replaced, not written through: its target keeps its content.
func TestProfileFirst_PlantedBatchSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	pf := ProfileFirst{Synergy: "synergy", CacheDir: filepath.Join(dir, "cache")}
	n, err := pf.shape(localNodes())
	if err != nil {
		t.Fatal(err)
	}
	key, err := pf.CacheKey([]string{script}, n)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(pf.CacheDir, 0o755)
	if err := os.Symlink(victim, filepath.Join(pf.CacheDir, key+".sbatch")); err != nil {
		t.Fatal(err)
	}
	f := &profilingSlurm{profile: examples + "image.json"}
	if _, _, err := pf.Ensure(context.Background(), f, localNodes(), []string{script}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("victim now holds %q", b)
	}
}
