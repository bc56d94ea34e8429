package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MiB is Slurm's memory unit ("MB" in its configuration and output).
const MiB = 1 << 20

// Node is one Slurm node as sinfo --json reports it.
type Node struct {
	Name       string
	Partitions []string
	// State is the base state (idle, mixed, allocated, down, ...); Flags
	// are the state flags (DRAIN, NOT_RESPONDING, ...).
	State string
	Flags []string
	CPUs  int
	// MemMiB is RealMemory.
	MemMiB int64
	GPUs   int
	// AllocCPUs, AllocMemMiB and AllocGPUs are what running jobs hold.
	AllocCPUs   int
	AllocMemMiB int64
	AllocGPUs   int
}

// Job is one job as squeue --json reports it.
type Job struct {
	ID        int
	Name      string
	User      string
	Partition string
	// State is PENDING, RUNNING, ...; Reason the state reason
	// (JobHeldUser, JobHeldAdmin, Resources, ...).
	State   string
	Reason  string
	Comment string
	// Nodes is the allocated node list (running jobs).
	Nodes string
	// NodeCount, Tasks, CPUs and CPUsPerTask are the request (CPUsPerTask
	// 0 when not set).
	NodeCount   int
	Tasks       int
	CPUs        int
	CPUsPerTask int
	// MemPerNodeMiB is the memory per node asked (0 when asked per CPU).
	MemPerNodeMiB int64
	// GPUsPerNode is the gres:gpu count per node (--gres=gpu:N); GPUsPerJob
	// the count asked with --gpus (tres_per_job).
	GPUsPerNode int
	GPUsPerJob  int
	SubmitTime  int64
	// ExitCode is the wait status of a finished job (exit status << 8);
	// Restarts counts its requeues.
	ExitCode int
	Restarts int
	// StartTime is when the job's current (or last) run started, Unix
	// seconds (a pending job's is Slurm's estimate).
	StartTime int64
}

// Held reports whether the job waits on a hold (user's or admin's).
func (j Job) Held() bool {
	return j.State == "PENDING" && (j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin")
}

// number is a JSON number that may be null (22.05 writes null for unset
// values).
type number struct{ v *float64 }

func (n *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		n.v = nil
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	n.v = &f
	return nil
}

func (n number) int() int { return int(n.i64()) }
func (n number) i64() int64 {
	if n.v == nil {
		return 0
	}
	return int64(*n.v)
}

// ParseNodes decodes sinfo --json (the openapi v0.0.38 form of 22.05 and
// later forms that keep these fields).
func ParseNodes(data []byte) ([]Node, error) {
	var doc struct {
		Errors []json.RawMessage `json:"errors"`
		Nodes  []struct {
			Name        string   `json:"name"`
			Partitions  []string `json:"partitions"`
			State       string   `json:"state"`
			StateFlags  []string `json:"state_flags"`
			CPUs        number   `json:"cpus"`
			RealMemory  number   `json:"real_memory"`
			Gres        string   `json:"gres"`
			GresUsed    string   `json:"gres_used"`
			AllocCPUs   number   `json:"alloc_cpus"`
			AllocMemory number   `json:"alloc_memory"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("sinfo --json: %w", err)
	}
	if len(doc.Errors) > 0 {
		return nil, &ReportedError{Command: "sinfo --json", Errors: joinRaw(doc.Errors)}
	}
	var out []Node
	seen := map[string]bool{}
	for _, n := range doc.Nodes {
		if seen[n.Name] { // sinfo lists a node once per partition
			continue
		}
		seen[n.Name] = true
		gpus, err := GresGPUs(n.Gres)
		if err != nil {
			return nil, fmt.Errorf("sinfo --json: node %s: gres: %w", n.Name, err)
		}
		used, err := GresGPUs(n.GresUsed)
		if err != nil {
			return nil, fmt.Errorf("sinfo --json: node %s: gres_used: %w", n.Name, err)
		}
		out = append(out, Node{Name: n.Name, Partitions: n.Partitions, State: strings.ToLower(n.State), Flags: n.StateFlags,
			CPUs: n.CPUs.int(), MemMiB: n.RealMemory.i64(), GPUs: gpus,
			AllocCPUs: n.AllocCPUs.int(), AllocMemMiB: n.AllocMemory.i64(), AllocGPUs: used})
	}
	return out, nil
}

// ParseJobs decodes squeue --json.
func ParseJobs(data []byte) ([]Job, error) {
	var doc struct {
		Errors []json.RawMessage `json:"errors"`
		Jobs   []struct {
			ID          number `json:"job_id"`
			Name        string `json:"name"`
			User        string `json:"user_name"`
			Partition   string `json:"partition"`
			State       string `json:"job_state"`
			Reason      string `json:"state_reason"`
			Comment     string `json:"comment"`
			Nodes       string `json:"nodes"`
			NodeCount   number `json:"node_count"`
			Tasks       number `json:"tasks"`
			CPUs        number `json:"cpus"`
			CPUsPerTask number `json:"cpus_per_task"`
			MemPerNode  number `json:"memory_per_node"`
			TresPerNode string `json:"tres_per_node"`
			TresPerJob  string `json:"tres_per_job"`
			SubmitTime  number `json:"submit_time"`
			ExitCode    number `json:"exit_code"`
			StartTime   number `json:"start_time"`
			Restarts    number `json:"restart_cnt"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("squeue --json: %w", err)
	}
	if len(doc.Errors) > 0 {
		return nil, &ReportedError{Command: "squeue --json", Errors: joinRaw(doc.Errors)}
	}
	out := make([]Job, 0, len(doc.Jobs))
	for _, j := range doc.Jobs {
		perNode, err := GresGPUs(j.TresPerNode)
		if err != nil {
			return nil, fmt.Errorf("squeue --json: job %d: tres_per_node: %w", j.ID.int(), err)
		}
		perJob, err := GresGPUs(j.TresPerJob)
		if err != nil {
			return nil, fmt.Errorf("squeue --json: job %d: tres_per_job: %w", j.ID.int(), err)
		}
		out = append(out, Job{ID: j.ID.int(), Name: j.Name, User: j.User, Partition: j.Partition,
			State: j.State, Reason: j.Reason, Comment: j.Comment, Nodes: j.Nodes,
			NodeCount: j.NodeCount.int(), Tasks: j.Tasks.int(), CPUs: j.CPUs.int(), CPUsPerTask: j.CPUsPerTask.int(),
			MemPerNodeMiB: j.MemPerNode.i64(), GPUsPerNode: perNode, GPUsPerJob: perJob, SubmitTime: j.SubmitTime.i64(),
			ExitCode: j.ExitCode.int(), Restarts: j.Restarts.int(), StartTime: j.StartTime.i64()})
	}
	return out, nil
}

// GresGPUs counts the GPUs in a gres or TRES list as Slurm prints them:
// "gpu:8", "gpu:a100:4(S:0-1)", "gpu:3(IDX:0-2)", "gres:gpu:2",
// "gres/gpu=2", "gpu:(null):3(IDX:0-2)", several entries joined by commas;
// "", "N/A" and "(null)" are none.
func GresGPUs(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "N/A" || s == "(null)" {
		return 0, nil
	}
	total := 0
	for _, e := range splitGres(s) {
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		if i := strings.LastIndexByte(e, '('); i >= 0 && strings.HasSuffix(e, ")") && e[i:] != "(null)" {
			e = e[:i] // "(IDX:0-2)", "(S:0-1)"
		}
		name, rest, _ := strings.Cut(strings.Replace(e, "=", ":", 1), ":")
		if name != "gpu" {
			continue
		}
		parts := strings.Split(rest, ":")
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: no GPU count in %q", s, e)
		}
		total += n
	}
	return total, nil
}

// splitGres splits a gres list at the commas outside parentheses
// ("gpu:2(IDX:0,3),nic:1").
func splitGres(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// ReportedError is a --json answer whose "errors" list is not empty
// (22.05 exits 0 and says "Unspecified error" when slurmctld does not
// answer).
type ReportedError struct {
	Command string
	Errors  string
}

func (e *ReportedError) Error() string { return e.Command + " reports errors: " + e.Errors }

func joinRaw(msgs []json.RawMessage) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		var v struct {
			Error, Description, Source string
		}
		if json.Unmarshal(m, &v) == nil && (v.Error != "" || v.Description != "") {
			parts[i] = fmt.Sprintf("%s: %s (%s)", v.Source, v.Description, v.Error)
			continue
		}
		parts[i] = string(m)
	}
	return strings.Join(parts, "; ")
}

// Snapshot is what one pass sees.
type Snapshot struct {
	Nodes []Node
	Jobs  []Job
}

// ReadSnapshot reads the queue, then the nodes (so that a job that starts
// between the two reads is counted twice, never missed).
func ReadSnapshot(ctx context.Context, cmd Commander) (Snapshot, error) {
	var s Snapshot
	out, err := cmd.Run(ctx, "squeue", "--json")
	if err != nil {
		return s, wrapRead("read the queue (squeue --json)", err)
	}
	if s.Jobs, err = ParseJobs(out); err != nil {
		return s, diagnose(ctx, cmd, "read the queue (squeue --json)", err)
	}
	out, err = cmd.Run(ctx, "sinfo", "--json")
	if err != nil {
		return s, wrapRead("read the nodes (sinfo --json)", err)
	}
	if s.Nodes, err = ParseNodes(out); err != nil {
		return s, diagnose(ctx, cmd, "read the nodes (sinfo --json)", err)
	}
	return s, nil
}

// diagnose asks scontrol ping whether slurmctld answers when a --json
// read reported errors, and marks the error ErrUnreachable when it does
// not.
func diagnose(ctx context.Context, cmd Commander, what string, err error) error {
	var re *ReportedError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", what, err)
	}
	out, perr := cmd.Run(ctx, "scontrol", "ping")
	if perr != nil || !strings.Contains(string(out), "is UP") {
		ping, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if ping == "" && perr != nil {
			ping = perr.Error()
		}
		return fmt.Errorf("%s: %w (scontrol ping: %s; is slurmctld running, and SLURM_CONF set to its slurm.conf?): %v", what, ErrUnreachable, ping, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
