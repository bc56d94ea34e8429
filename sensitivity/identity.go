package sensitivity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/internal/units"
)

// IdentityVersion is the version of the identity object this package writes
// and the newest it reads.
const IdentityVersion = 1

// Identity is what a profile measured: the job (its command, the contents
// of the files its arguments name), the dataset (path, size, a content
// fingerprint), where it ran (runner, image) and the grid and measurement
// settings. A resumed profile must have the same identity as the run that
// resumes it, so that no column mixes two jobs, two datasets or two grids.
//
// Profiles written before identities were recorded have none (the field
// is optional); LegacyIdentity rebuilds what such a profile still says.
type Identity struct {
	Version int `json:"version"`
	// Command is the job's command as given, before the contract's flags.
	Command []string `json:"command"`
	// Files are the command's arguments that named a regular file when the
	// profile started (the script), with a hash of their contents.
	Files  []FileIdentity   `json:"files,omitempty"`
	Data   *DatasetIdentity `json:"data,omitempty"`
	Runner string           `json:"runner"`
	Image  string           `json:"image,omitempty"`
	Grid   GridIdentity     `json:"grid"`
}

// FileIdentity is one file the command names.
type FileIdentity struct {
	Arg    int    `json:"arg"` // index in Command
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"` // hex; "" when not recorded (legacy)
}

// DatasetIdentity is the dataset directory and a cheap fingerprint of its
// contents: file count and total size, and a SHA-256 over every file's
// relative name, size and modification time plus the first and last KiB of
// a sample of the files (profiler.FingerprintDataset says which).
type DatasetIdentity struct {
	Path        string `json:"path"`
	Bytes       int64  `json:"bytes"`
	Files       int    `json:"files"`
	Fingerprint string `json:"fingerprint"` // hex; "" when not recorded (legacy)
}

// GridIdentity are the settings that decide which points are measured and
// how: any change makes a cell measured under one incomparable with the
// others. Zero values of the fields legacy profiles do not record mean
// "unknown" there (see LegacyIdentity).
type GridIdentity struct {
	CPUs           []float64 `json:"cpus"`
	MemLimitsBytes []int64   `json:"mem_limits_bytes"` // limited values; unlimited is always measured
	Strategy       string    `json:"strategy"`
	Budget         int       `json:"budget,omitempty"`
	ValidateCells  int       `json:"validate_cells,omitempty"`
	Batch          int       `json:"batch"`
	GPUs           int       `json:"gpus"`
	MaxIterations  int       `json:"max_iterations"`
	Warmup         int       `json:"warmup,omitempty"`
	MinIterations  int       `json:"min_iterations,omitempty"`
	TargetRelCI    float64   `json:"target_rel_ci,omitempty"`
	ReadBPS        int64     `json:"read_bytes_per_s,omitempty"`
	StallBreakdown bool      `json:"stall_breakdown"`
}

// LegacyIdentity rebuilds the identity of a profile that records none from
// what it does record: command, runner, image, data path and size, axes,
// strategy, batch, GPUs and the iteration cap. Contents (file hashes, the
// dataset fingerprint) and the settings such profiles did not keep are
// unknown, marked by Legacy and skipped by CompareIdentity.
func LegacyIdentity(p *Profile) *Identity {
	id := &Identity{
		Command: p.Job.Command, Runner: p.Job.Runner, Image: p.Job.Image,
		Grid: GridIdentity{
			CPUs: p.Axes.CPUs, Strategy: p.Strategy,
			Batch: p.Job.Batch, GPUs: p.Job.GPUs, MaxIterations: p.Job.MaxIterations,
		},
	}
	for _, m := range p.Axes.MemLimitBytes {
		if !Unlimited(m) {
			id.Grid.MemLimitsBytes = append(id.Grid.MemLimitsBytes, m)
		}
	}
	if p.Job.DataDir != "" {
		id.Data = &DatasetIdentity{Path: p.Job.DataDir, Bytes: p.Host.DatasetBytes, Files: p.Host.DatasetFiles}
	}
	return id
}

// Legacy reports whether id was rebuilt from a profile that recorded none
// (version 0): its contents are unknown.
func (id *Identity) Legacy() bool { return id.Version == 0 }

// Difference is one way two identities differ. Setting names the synergy
// profile flag (or the part of the command) that differs; Was and Is say
// what the profile recorded and what this run has.
type Difference struct {
	Setting string
	Was, Is string
}

func (d Difference) String() string {
	return fmt.Sprintf("the profile was measured with %s %s, this run has %s %s", d.Setting, d.Was, d.Setting, d.Is)
}

// CompareIdentity lists how cur (this run) differs from was (the profile's),
// setting by setting in a fixed order. Fields a legacy identity does not
// know are not compared.
func CompareIdentity(was, cur *Identity) []Difference {
	var ds []Difference
	add := func(setting, a, b string) {
		if a != b {
			ds = append(ds, Difference{setting, a, b})
		}
	}
	add("the command", quoteArgs(was.Command), quoteArgs(cur.Command))
	ds = append(ds, compareFiles(was, cur)...)
	ds = append(ds, compareData(was.Data, cur.Data, was.Legacy())...)
	add("--runner", orNone(was.Runner), orNone(cur.Runner))
	add("--docker-img", orNone(was.Image), orNone(cur.Image))
	return append(ds, compareGrid(&was.Grid, &cur.Grid, was.Legacy())...)
}

func compareFiles(was, cur *Identity) []Difference {
	if was.Legacy() {
		return nil
	}
	var ds []Difference
	for _, f := range was.Files {
		i := slices.IndexFunc(cur.Files, func(g FileIdentity) bool { return g.Arg == f.Arg && g.Path == f.Path })
		switch {
		case i < 0:
			ds = append(ds, Difference{"the file " + f.Path, f.text(), "no such file"})
		case cur.Files[i].SHA256 != f.SHA256 || cur.Files[i].Bytes != f.Bytes:
			ds = append(ds, Difference{"the file " + f.Path, f.text(), cur.Files[i].text() + " (its contents changed)"})
		}
	}
	for _, g := range cur.Files {
		if !slices.ContainsFunc(was.Files, func(f FileIdentity) bool { return g.Arg == f.Arg && g.Path == f.Path }) {
			ds = append(ds, Difference{"the file " + g.Path, "no such file", g.text()})
		}
	}
	return ds
}

func (f FileIdentity) text() string {
	return fmt.Sprintf("(%s, sha256 %s)", units.FormatBytes(f.Bytes), short(f.SHA256))
}

func compareData(was, cur *DatasetIdentity, legacy bool) []Difference {
	text := func(d *DatasetIdentity, fp bool) string {
		if d == nil {
			return "none"
		}
		s := fmt.Sprintf("%s (%s in %d file%s", d.Path, units.FormatBytes(d.Bytes), d.Files, plural(d.Files))
		if fp && d.Fingerprint != "" {
			s += ", fingerprint " + short(d.Fingerprint)
		}
		return s + ")"
	}
	switch {
	case was == nil && cur == nil:
		return nil
	case was == nil || cur == nil || was.Path != cur.Path:
		return []Difference{{"--data", text(was, !legacy), text(cur, !legacy)}}
	case was.Bytes != cur.Bytes || was.Files != cur.Files ||
		!legacy && was.Fingerprint != cur.Fingerprint:
		return []Difference{{"--data", text(was, !legacy), text(cur, !legacy) + " (its contents changed)"}}
	}
	return nil
}

func compareGrid(was, cur *GridIdentity, legacy bool) []Difference {
	var ds []Difference
	add := func(setting, a, b string) {
		if a != b {
			ds = append(ds, Difference{setting, a, b})
		}
	}
	add("--cpus", floatsText(was.CPUs), floatsText(cur.CPUs))
	add("--mem-limits", memsText(was.MemLimitsBytes), memsText(cur.MemLimitsBytes))
	add("--strategy", was.Strategy, cur.Strategy)
	add("--batch", strconv.Itoa(was.Batch), strconv.Itoa(cur.Batch))
	add("--num-gpus", strconv.Itoa(was.GPUs), strconv.Itoa(cur.GPUs))
	add("--max-iterations", strconv.Itoa(was.MaxIterations), strconv.Itoa(cur.MaxIterations))
	if legacy {
		return ds
	}
	add("--budget", strconv.Itoa(was.Budget), strconv.Itoa(cur.Budget))
	add("--validate", strconv.Itoa(was.ValidateCells), strconv.Itoa(cur.ValidateCells))
	add("--warmup", strconv.Itoa(was.Warmup), strconv.Itoa(cur.Warmup))
	add("--min-iterations", strconv.Itoa(was.MinIterations), strconv.Itoa(cur.MinIterations))
	add("--target-ci", pctText(was.TargetRelCI), pctText(cur.TargetRelCI))
	add("--disk-read-bps", bpsText(was.ReadBPS), bpsText(cur.ReadBPS))
	add("--stall-breakdown", strconv.FormatBool(was.StallBreakdown), strconv.FormatBool(cur.StallBreakdown))
	return ds
}

func quoteArgs(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

func floatsText(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmtF(x)
	}
	return strings.Join(s, ",")
}

func memsText(v []int64) string {
	if len(v) == 0 {
		return "(none)"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = units.FormatBytes(x)
	}
	return strings.Join(s, ",")
}

func bpsText(b int64) string {
	if b == 0 {
		return "(none)"
	}
	return units.FormatBytes(b) + "/s"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// short is the first 12 hex digits of a hash, as error messages show it.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// check validates an identity's fields (the profile reader calls it).
func (c *checker) identity(id *Identity) {
	switch {
	case id.Version < 1 || id.Version > IdentityVersion:
		c.fail("identity.version", fmtI(int64(id.Version)), "", "is not a version this synergy reads (1 to %d)", IdentityVersion)
	case len(id.Command) == 0:
		c.fail("identity.command", "[]", "", "is empty")
	}
	for i, f := range id.Files {
		if f.Arg < 0 || f.Arg >= len(id.Command) {
			c.fail(fmt.Sprintf("identity.files[%d].arg", i), fmtI(int64(f.Arg)), "", "is not an index of identity.command")
		}
		c.int(fmt.Sprintf("identity.files[%d].bytes", i), "", f.Bytes, 0, 1<<50, "larger than any file")
	}
	if d := id.Data; d != nil {
		c.int("identity.data.bytes", "", d.Bytes, 0, 1<<60, "larger than any dataset")
		c.int("identity.data.files", "", int64(d.Files), 0, 1<<40, "more files than any dataset")
	}
	c.float("identity.grid.target_rel_ci", "", id.Grid.TargetRelCI, 0, 1, "a fraction of the mean")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// pctText is a fraction as --target-ci takes it: a percentage.
func pctText(f float64) string { return strconv.FormatFloat(100*f, 'g', 6, 64) }
