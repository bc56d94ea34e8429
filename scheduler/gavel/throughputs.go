package gavel

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"

	"github.com/synergy-sched/synergy/internal/safefile"
)

// JobType is Gavel's job-type key: a model (with its batch size, as in
// "ResNet-18 (batch size 64)") at a scale factor (GPUs per job).
type JobType struct {
	Model       string
	ScaleFactor int
}

// String is the key as Gavel's throughputs file writes it:
// "('<model>', <scale factor>)".
func (k JobType) String() string {
	return fmt.Sprintf("('%s', %d)", k.Model, k.ScaleFactor)
}

// Throughputs is Gavel's throughputs file: per GPU (worker) type, per job
// type, the isolated throughput (steps/s, the "null" entry) and the
// co-located throughputs with each partner job type ([this, partner]).
type Throughputs struct {
	Isolated  map[string]map[JobType]float64
	Colocated map[string]map[JobType]map[JobType][2]float64
}

var jobTypeKey = regexp.MustCompile(`^\('(.*)', (\d+)\)$`)

// ParseJobType reads "('<model>', <scale factor>)".
func ParseJobType(s string) (JobType, error) {
	m := jobTypeKey.FindStringSubmatch(s)
	if m == nil {
		return JobType{}, fmt.Errorf("job type key %q: want ('<model>', <scale factor>)", s)
	}
	sf, err := strconv.Atoi(m[2])
	if err != nil || sf < 1 {
		return JobType{}, fmt.Errorf("job type key %q: scale factor must be an integer ≥ 1", s)
	}
	if m[1] == "" {
		return JobType{}, fmt.Errorf("job type key %q: empty model", s)
	}
	return JobType{Model: m[1], ScaleFactor: sf}, nil
}

// MaxFileBytes bounds the JSON files Gavel's simulator reads whole
// (throughputs, entities, prices): Gavel's own throughputs file is about
// 100 KiB; a larger one is refused by its size before it is read.
const MaxFileBytes = 8 << 20

// LoadThroughputs reads a throughputs file: a regular file of at most
// MaxFileBytes.
func LoadThroughputs(path string) (*Throughputs, error) {
	b, err := safefile.ReadFile(path, MaxFileBytes, "throughputs")
	if err != nil {
		return nil, fmt.Errorf("throughputs: %w", err)
	}
	t, err := ParseThroughputs(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseThroughputs reads Gavel's throughputs JSON (worker type → job-type
// key → "null" or partner key → steps/s or [this, partner]). Keys ending
// in "_unconsolidated" are read like any other worker type; the simulator
// uses only the types of its cluster.
func ParseThroughputs(b []byte) (*Throughputs, error) {
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("throughputs: %w (want {worker type: {\"('<model>', <scale factor>)\": {\"null\": steps/s, partner: [a, b]}}})", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("throughputs: no worker types")
	}
	t := &Throughputs{Isolated: map[string]map[JobType]float64{}, Colocated: map[string]map[JobType]map[JobType][2]float64{}}
	for _, wt := range sortedKeys(raw) {
		if wt == "" {
			return nil, fmt.Errorf("throughputs: empty worker type name")
		}
		iso := map[JobType]float64{}
		col := map[JobType]map[JobType][2]float64{}
		for _, k := range sortedKeys(raw[wt]) {
			where := fmt.Sprintf("throughputs: %q → %q", wt, k)
			jt, err := ParseJobType(k)
			if err != nil {
				return nil, fmt.Errorf("throughputs: %q: %w", wt, err)
			}
			if _, dup := iso[jt]; dup {
				return nil, fmt.Errorf("%s: job type given twice", where)
			}
			entries := raw[wt][k]
			null, ok := entries["null"]
			if !ok {
				return nil, fmt.Errorf("%s: no \"null\" entry (isolated throughput)", where)
			}
			v, err := nonNegative(null)
			if err != nil {
				return nil, fmt.Errorf("%s → \"null\": %w", where, err)
			}
			iso[jt] = v
			for _, pk := range sortedKeys(entries) {
				if pk == "null" {
					continue
				}
				partner, err := ParseJobType(pk)
				if err != nil {
					return nil, fmt.Errorf("%s: partner %w", where, err)
				}
				var pair []json.RawMessage
				if err := json.Unmarshal(entries[pk], &pair); err != nil || len(pair) != 2 {
					return nil, fmt.Errorf("%s → %q: want [this job's steps/s, partner's steps/s]", where, pk)
				}
				var p [2]float64
				for i := range pair {
					if p[i], err = nonNegative(pair[i]); err != nil {
						return nil, fmt.Errorf("%s → %q[%d]: %w", where, pk, i, err)
					}
				}
				if col[jt] == nil {
					col[jt] = map[JobType][2]float64{}
				}
				col[jt][partner] = p
			}
		}
		t.Isolated[wt], t.Colocated[wt] = iso, col
	}
	return t, nil
}

func nonNegative(raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("want a number of steps/s, got %s", raw)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("throughput %v: must be a finite number ≥ 0", v)
	}
	return v, nil
}

// WorkerTypes lists the file's worker types, sorted.
func (t *Throughputs) WorkerTypes() []string { return sortedKeys(t.Isolated) }

// Row is a job type's isolated throughput on each of types, or an error
// naming the first type that lacks it.
func (t *Throughputs) Row(jt JobType, types []string) ([]float64, error) {
	row := make([]float64, len(types))
	for i, wt := range types {
		iso, ok := t.Isolated[wt]
		if !ok {
			return nil, fmt.Errorf("throughputs have no worker type %q (they have %v)", wt, t.WorkerTypes())
		}
		v, ok := iso[jt]
		if !ok {
			return nil, fmt.Errorf("throughputs have no entry for %s on %q", jt, wt)
		}
		row[i] = v
	}
	return row, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
