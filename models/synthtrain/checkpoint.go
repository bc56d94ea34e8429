package synthtrain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/jobcontract"
)

// The checkpoint half of the job contract (docs/job-contract.md,
// "Checkpoint and resume"), in the convention of PyTorch Lightning's Slurm
// auto-requeue and submitit: on SIGUSR1 the job saves its progress at the
// end of the iteration in progress, asks Slurm to requeue it, and exits; on
// its next start it resumes from the checkpoint. SIGTERM saves and exits
// without a requeue (whoever sent it is ending the job).
const (
	// EnvCheckpointDir names the checkpoint directory. Unset under Slurm
	// (SLURM_JOB_ID set): $SLURM_SUBMIT_DIR/synergy-checkpoints/JOBID.
	// Unset outside Slurm: no checkpoint (a stop loses the run's work).
	EnvCheckpointDir = jobcontract.EnvCheckpointDir
	// EnvRequeue says what the job asks of Slurm after saving on SIGUSR1:
	// "requeue" (scontrol requeue, Lightning's; the default under Slurm),
	// "hold" (scontrol requeuehold: the job waits held for whoever
	// signalled it, e.g. synergy's bridge, to update and release it) or
	// "none" (the default outside Slurm).
	EnvRequeue = jobcontract.EnvRequeue
	// CheckpointFile is the checkpoint's name inside the directory.
	CheckpointFile = "synthtrain.json"
	// ExitPreempted is the exit status of a job stopped by the preemption
	// signal (or SIGTERM) at an iteration boundary; its checkpoint, when it
	// has a directory, is saved.
	ExitPreempted = 3
	// checkpointVersion is the format's version; another is refused.
	checkpointVersion = 1
	// maxCheckpointBytes bounds the checkpoint read: it is a few hundred
	// bytes, and a bigger file is not ours.
	maxCheckpointBytes = 64 << 10
	// requeueTimeout bounds the scontrol call.
	requeueTimeout = 60 * time.Second
)

// Requeue modes (EnvRequeue's values).
const (
	RequeueNone  = "none"
	RequeueSelf  = "requeue"
	RequeueHeld  = "hold"
	slurmJobIDEv = "SLURM_JOB_ID"
)

// ErrPreempted is Train's error when the preemption channel stopped it at
// an iteration boundary (after the checkpoint was saved, when there is a
// directory).
var ErrPreempted = errors.New("stopped by the preemption signal")

// Checkpoint is what synthtrain saves: where the run is, and what it must
// match to resume (the same dataset, batch, seed and preset give the same
// batches in the same order, so the resumed run continues exactly where the
// stopped one left off).
type Checkpoint struct {
	Version int    `json:"version"`
	Job     string `json:"job"`
	// Iterations is how many iterations are done (the next one's index);
	// Epoch the epoch of the next batch; NextBatch the loader's index of
	// the next batch, across epochs; Samples the samples consumed so far.
	Iterations int   `json:"iterations"`
	Epoch      int   `json:"epoch"`
	NextBatch  int   `json:"next_batch"`
	Samples    int64 `json:"samples"`
	// Saves counts the checkpoints written, Resumes the starts from one.
	Saves   int `json:"saves"`
	Resumes int `json:"resumes"`
	// What must match to resume.
	Preset    string `json:"preset"`
	Batch     int    `json:"batch"`
	Seed      uint64 `json:"seed"`
	Files     int    `json:"files"`
	Synthetic bool   `json:"synthetic"`
	// Reason is why it was saved: "signal", "periodic", "done".
	Reason string  `json:"reason"`
	TS     float64 `json:"ts"`
}

// CheckpointConfig turns checkpointing on for Train.
type CheckpointConfig struct {
	// Dir is the checkpoint directory (created 0700 when missing).
	Dir string
	// Every saves a checkpoint every so many iterations as well (0: only on
	// the preemption signal and at the end), bounding the work a SIGKILL
	// loses.
	Every int
}

// checkpointPath returns the checkpoint file in dir.
func checkpointPath(dir string) string { return filepath.Join(dir, CheckpointFile) }

// LoadCheckpoint reads dir's checkpoint; (nil, nil) when there is none.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	path := checkpointPath(dir)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read checkpoint %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCheckpointBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	if len(b) > maxCheckpointBytes {
		return nil, fmt.Errorf("read checkpoint %s: over %d bytes, not a synthtrain checkpoint", path, maxCheckpointBytes)
	}
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	switch {
	case c.Version != checkpointVersion || c.Job != "synthtrain":
		return nil, fmt.Errorf("read checkpoint %s: version %d of %q, want %d of \"synthtrain\"", path, c.Version, c.Job, checkpointVersion)
	case c.Iterations < 0 || c.Epoch < 0 || c.NextBatch < 0 || c.Samples < 0 || c.Saves < 0 || c.Resumes < 0:
		return nil, fmt.Errorf("read checkpoint %s: a negative count", path)
	case c.NextBatch > c.Iterations:
		// Each iteration takes at most one new batch.
		return nil, fmt.Errorf("read checkpoint %s: next_batch %d past iterations %d", path, c.NextBatch, c.Iterations)
	}
	return &c, nil
}

// saveCheckpoint writes c to dir atomically: a reader (the next start) sees
// the previous checkpoint or this one whole, never half of one.
func saveCheckpoint(dir string, c Checkpoint) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := atomicfile.Write(checkpointPath(dir), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", checkpointPath(dir), err)
	}
	return nil
}

// resumeCheck says why c cannot resume a run of cfg over files files ("":
// it can).
func resumeCheck(c *Checkpoint, cfg TrainConfig, files int) string {
	var diff []string
	if c.Preset != cfg.Preset.Name {
		diff = append(diff, fmt.Sprintf("preset %s, now %s", c.Preset, cfg.Preset.Name))
	}
	if c.Batch != cfg.Batch {
		diff = append(diff, fmt.Sprintf("batch %d, now %d", c.Batch, cfg.Batch))
	}
	if c.Seed != cfg.Seed {
		diff = append(diff, fmt.Sprintf("seed %d, now %d", c.Seed, cfg.Seed))
	}
	if c.Synthetic != cfg.Synthetic {
		diff = append(diff, fmt.Sprintf("synthetic %v, now %v", c.Synthetic, cfg.Synthetic))
	}
	if c.Files != files {
		diff = append(diff, fmt.Sprintf("%d dataset files, now %d", c.Files, files))
	}
	return strings.Join(diff, "; ")
}

// CheckpointDir returns the checkpoint directory the environment names
// ("" for none): $SYNERGY_CHECKPOINT_DIR, else under Slurm
// $SLURM_SUBMIT_DIR/synergy-checkpoints/JOBID (an array task's JOBID is
// ARRAYJOB_TASK), so that a requeued job, which keeps its id, finds it.
func CheckpointDir(getenv func(string) string) string {
	if d := getenv(EnvCheckpointDir); d != "" {
		return d
	}
	id := slurmJobID(getenv)
	if id == "" {
		return ""
	}
	base := getenv("SLURM_SUBMIT_DIR")
	if base == "" {
		base = "."
	}
	return filepath.Join(base, "synergy-checkpoints", id)
}

// slurmJobID returns the job's id as scontrol takes it ("" outside Slurm or
// for an id that is not digits): ARRAYJOB_TASK for an array task.
func slurmJobID(getenv func(string) string) string {
	id := getenv(slurmJobIDEv)
	if a, t := getenv("SLURM_ARRAY_JOB_ID"), getenv("SLURM_ARRAY_TASK_ID"); a != "" && t != "" {
		id = a + "_" + t
	}
	if id == "" || strings.Trim(id, "0123456789_") != "" {
		return ""
	}
	return id
}

// requeueMode returns EnvRequeue's mode, its default from the environment.
func requeueMode(getenv func(string) string) (string, error) {
	switch m := getenv(EnvRequeue); m {
	case "":
		if slurmJobID(getenv) != "" {
			return RequeueSelf, nil
		}
		return RequeueNone, nil
	case RequeueNone, RequeueSelf, RequeueHeld:
		if m != RequeueNone && slurmJobID(getenv) == "" {
			return "", fmt.Errorf("%s=%s needs %s (a Slurm job)", EnvRequeue, m, slurmJobIDEv)
		}
		return m, nil
	default:
		return "", fmt.Errorf("%s=%q: want %s, %s or %s", EnvRequeue, m, RequeueSelf, RequeueHeld, RequeueNone)
	}
}

// requeue asks Slurm to requeue this job (scontrol requeue or requeuehold),
// as Lightning's and submitit's jobs do after their checkpoint.
func requeue(ctx context.Context, mode, id string) error {
	verb := "requeue"
	if mode == RequeueHeld {
		verb = "requeuehold"
	}
	ctx, cancel := context.WithTimeout(ctx, requeueTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", verb, id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scontrol %s %s: %w: %s", verb, id, err, bytes.TrimSpace(out))
	}
	return nil
}
