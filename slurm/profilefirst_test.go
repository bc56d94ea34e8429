package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profilingSlurm is a fakeSlurm whose sbatch --wait "runs" the profiling
// job by copying a profile to the --out its batch script names.
type profilingSlurm struct {
	fakeSlurm
	profile string
	runs    int
}

func (p *profilingSlurm) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if argv[0] == "sbatch" && strings.Contains(strings.Join(argv, " "), "--wait") {
		p.runs++
		script, err := os.ReadFile(argv[len(argv)-1])
		if err != nil {
			return nil, err
		}
		out := between(string(script), "'--out' '", "'")
		data, err := os.ReadFile(p.profile)
		if err != nil {
			return nil, err
		}
		return []byte("1\n"), os.WriteFile(out, data, 0o644)
	}
	return p.fakeSlurm.Run(ctx, argv...)
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

func TestProfileFirst_ProfilesOnceThenReuses(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec python3 train.py \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &profilingSlurm{profile: examples + "image.json"}
	pf := ProfileFirst{Synergy: "/opt/synergy it's", CacheDir: filepath.Join(dir, "cache"), Data: "/data/imagenet", ProfileArgs: []string{"--cpus=1,2"}}
	argv := []string{script, "--lr", "0.1"}
	p1, reused, err := pf.Ensure(context.Background(), f, localNodes(), argv)
	if err != nil || reused || f.runs != 1 {
		t.Fatalf("first: %q reused %v runs %d: %v", p1, reused, f.runs, err)
	}
	batch, err := os.ReadFile(strings.TrimSuffix(p1, ".json") + ".sbatch")
	if err != nil {
		t.Fatal(err)
	}
	wantExec := `exec '/opt/synergy it'\''s' 'profile' '--out' '` + strings.TrimSuffix(p1, ".json") + `.partial.json' '--data' '/data/imagenet' '--cpus=1,2' '--' '` + script + `' '--lr' '0.1'`
	if !strings.Contains(string(batch), wantExec) {
		t.Errorf("batch script:\n%s\nwant the line\n%s", batch, wantExec)
	}
	p2, reused, err := pf.Ensure(context.Background(), f, localNodes(), argv)
	if err != nil || !reused || p2 != p1 || f.runs != 1 {
		t.Errorf("second: %q reused %v runs %d: %v", p2, reused, f.runs, err)
	}
	// Another argument, another node shape, or a changed script: a new
	// profile.
	if p3, _, _ := pf.Ensure(context.Background(), f, localNodes(), []string{script, "--lr", "0.2"}); p3 == p1 || f.runs != 2 {
		t.Errorf("other arguments: %q, runs %d", p3, f.runs)
	}
	big := localNodes()
	for i := range big {
		big[i].CPUs = 48
	}
	if p4, _, _ := pf.Ensure(context.Background(), f, big, argv); p4 == p1 || f.runs != 3 {
		t.Errorf("other shape: %q, runs %d", p4, f.runs)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec python3 train2.py\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p5, _, _ := pf.Ensure(context.Background(), f, localNodes(), argv); p5 == p1 || f.runs != 4 {
		t.Errorf("changed script: %q, runs %d", p5, f.runs)
	}
}

func TestProfileFirst_FailedJobCachesNothing(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &profilingSlurm{profile: bad}
	pf := ProfileFirst{Synergy: "synergy", CacheDir: filepath.Join(dir, "cache")}
	if _, _, err := pf.Ensure(context.Background(), f, localNodes(), []string{script}); err == nil || !strings.Contains(err.Error(), "no readable profile") {
		t.Fatalf("err = %v", err)
	}
	if _, reused, _ := pf.Ensure(context.Background(), f, localNodes(), []string{script}); reused || f.runs != 2 {
		t.Errorf("a failed profile was reused (runs %d)", f.runs)
	}
	if _, _, err := pf.Ensure(context.Background(), f, localNodes(), []string{filepath.Join(dir, "missing.sh")}); err == nil || !strings.Contains(err.Error(), "batch script") {
		t.Errorf("missing script: %v", err)
	}
}

func TestSplitSbatch(t *testing.T) {
	opts, script, err := SplitSbatch([]string{"--time=10", "-N1", "train.sh", "--lr", "0.1"})
	if err != nil || strings.Join(opts, " ") != "--time=10 -N1" || strings.Join(script, " ") != "train.sh --lr 0.1" {
		t.Errorf("%q %q %v", opts, script, err)
	}
	if _, _, err := SplitSbatch([]string{"--time=10"}); err == nil {
		t.Error("no script: no error")
	}
}
