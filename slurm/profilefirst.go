package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ProfileFirst is `synergy slurm submit --profile-first`: profile the job
// with `synergy profile` as a short Slurm job on a node of the target
// kind, then submit it from the profile written, or reuse a profile
// already in the cache for the same script, arguments, dataset, profile
// flags and node shape.
type ProfileFirst struct {
	// Synergy is the synergy binary the profiling job runs (a path the
	// nodes can run).
	Synergy string
	// CacheDir holds the profiles by key, their batch scripts and logs.
	CacheDir string
	// Data is the dataset directory (synergy profile --data).
	Data string
	// ProfileArgs are more flags for synergy profile (--cpus 1,2 ...).
	ProfileArgs []string
	// Partition, when set, is where the profiling job runs.
	Partition string
}

// SplitSbatch splits what follows -- into sbatch's options and the script
// with its arguments: the script is the first word not starting with "-"
// (so options must be written --name=value).
func SplitSbatch(args []string) (opts, script []string, err error) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return args[:i], args[i:], nil
		}
	}
	return nil, nil, errors.New("no batch script: only sbatch options (each one word, name=value) and no script after them")
}

// shape is the node shape a profile is cached for: the first usable GPU
// node's CPUs, memory and GPUs (of the partition).
func (pf ProfileFirst) shape(nodes []Node) (Node, error) {
	c, excluded := clusterOf(Config{Partition: pf.Partition}, nodes)
	if len(c.Servers) == 0 {
		return Node{}, fmt.Errorf("no node with GPUs to profile on (%s)", strings.Join(excluded, "; "))
	}
	s := c.Servers[0]
	return Node{Name: s.Name, CPUs: int(s.CPUs), MemMiB: s.MemBytes / MiB, GPUs: s.GPUs}, nil
}

// CacheKey names the profile of script on node shape n: a hash of the
// script's absolute path and content, its arguments, the dataset's
// absolute path, the profile flags and the shape.
func (pf ProfileFirst) CacheKey(script []string, n Node) (string, error) {
	h := sha256.New()
	abs, err := filepath.Abs(script[0])
	if err != nil {
		return "", err
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fmt.Errorf("batch script: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("batch script: %w", err)
	}
	data := ""
	if pf.Data != "" {
		if data, err = filepath.Abs(pf.Data); err != nil {
			return "", err
		}
	}
	fields := append([]string{abs, data, fmt.Sprintf("cpus=%d mem_mib=%d gpus=%d", n.CPUs, n.MemMiB, n.GPUs)}, script[1:]...)
	fields = append(fields, "--")
	fields = append(fields, pf.ProfileArgs...)
	for _, s := range fields {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// shellQuote quotes s for sh: the batch script is the one place a command
// line becomes text, and every word is quoted.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// BatchScript is the profiling job's script: exec synergy profile with
// every word quoted.
func (pf ProfileFirst) BatchScript(out string, script []string) string {
	argv := []string{pf.Synergy, "profile", "--out", out}
	if pf.Data != "" {
		argv = append(argv, "--data", pf.Data)
	}
	argv = append(argv, pf.ProfileArgs...)
	argv = append(argv, "--")
	argv = append(argv, script...)
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return "#!/bin/sh\n# Written by synergy slurm submit --profile-first.\nexec " + strings.Join(q, " ") + "\n"
}

// Ensure returns the cached profile for script on the nodes' shape, or
// profiles it first: sbatch --wait runs the batch script on one whole node
// with one GPU; the profile becomes the cache entry only when the job
// succeeded and the profile reads. reused says it was in the cache.
func (pf ProfileFirst) Ensure(ctx context.Context, cmd Commander, nodes []Node, script []string) (path string, reused bool, err error) {
	n, err := pf.shape(nodes)
	if err != nil {
		return "", false, err
	}
	key, err := pf.CacheKey(script, n)
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(pf.CacheDir, key+".json")
	if _, err := sensitivity.Load(path); err == nil {
		return path, true, nil
	}
	if err := os.MkdirAll(pf.CacheDir, 0o755); err != nil {
		return "", false, fmt.Errorf("profile cache: %w", err)
	}
	partial := filepath.Join(pf.CacheDir, key+".partial.json")
	batch := filepath.Join(pf.CacheDir, key+".sbatch")
	logf := filepath.Join(pf.CacheDir, key+".log")
	_ = os.Remove(partial)
	// Written to a fresh file and renamed into place: a symlink planted at
	// the name in a shared cache directory is replaced, not written through.
	if err := atomicfile.Write(batch, []byte(pf.BatchScript(partial, script)), 0o755); err != nil {
		return "", false, fmt.Errorf("profile cache: %w", err)
	}
	argv := []string{"sbatch", "--parsable", "--wait", "--nodes=1", "--ntasks=1", "--exclusive", "--gres=gpu:1",
		"--job-name=synergy-profile-" + filepath.Base(script[0]), "--output=" + logf}
	if pf.Partition != "" {
		argv = append(argv, "--partition="+pf.Partition)
	}
	if _, err := cmd.Run(ctx, append(argv, batch)...); err != nil {
		return "", false, fmt.Errorf("profiling job (%s, log %s): %w", batch, logf, err)
	}
	if _, err := sensitivity.Load(partial); err != nil {
		return "", false, fmt.Errorf("profiling job wrote no readable profile (log %s): %w", logf, err)
	}
	if err := os.Rename(partial, path); err != nil {
		return "", false, fmt.Errorf("profile cache: %w", err)
	}
	return path, false, nil
}

// QuoteArgv is argv as one line a person can paste into sh (for display:
// commands are never run through a shell).
func QuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = a
		if a == "" || strings.ContainsFunc(a, unsafeInShell) {
			q[i] = shellQuote(a)
		}
	}
	return strings.Join(q, " ")
}

func unsafeInShell(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,+@%", r))
}
