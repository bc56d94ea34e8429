package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Server is one machine of a cluster.
type Server struct {
	// Name is how explanations refer to the server ("server-3").
	Name     string  `json:"name"`
	Rack     int     `json:"rack"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes int64   `json:"mem_bytes"`
	// GPUType is the GPU model of the server's GPUs ("v100", "a100", any
	// name); optional: empty for clusters of one untyped kind.
	GPUType string `json:"gpu_type,omitempty"`
}

// Cluster is a set of servers. Server i in Servers is addressed by index i
// everywhere in this package; GPU indices run across servers in that order
// (server 0 holds GPUs 0..GPUs-1), which is what "first fit by GPU index"
// means.
type Cluster struct {
	Name    string   `json:"name"`
	Servers []Server `json:"servers"`
}

// Totals sums the servers' resources.
func (c *Cluster) Totals() Resources {
	var t Resources
	for _, s := range c.Servers {
		t.GPUs += s.GPUs
		t.CPUs += s.CPUs
		t.MemBytes += float64(s.MemBytes)
	}
	return t
}

// PerServer is Synergy's per_server_size: the cluster's totals divided by
// the number of servers and truncated to whole units, as the original does
// (int(total/servers)).
func (c *Cluster) PerServer() Resources {
	t := c.Totals()
	n := float64(len(c.Servers))
	if n == 0 {
		return Resources{}
	}
	return Resources{
		GPUs:     int(float64(t.GPUs) / n),
		CPUs:     math.Trunc(t.CPUs / n),
		MemBytes: math.Trunc(t.MemBytes / n),
	}
}

// FairShare is the GPU-proportional share of one GPU: PerServer divided by
// GPUs per server (Synergy's per_server_size_fair; 3 CPUs and 62.5 GB on the
// default cluster).
func (c *Cluster) FairShare() PerGPU {
	p := c.PerServer()
	if p.GPUs == 0 {
		return PerGPU{}
	}
	return PerGPU{CPUs: p.CPUs / float64(p.GPUs), MemBytes: p.MemBytes / float64(p.GPUs)}
}

// Validate checks that the cluster can be scheduled on.
func (c *Cluster) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("cluster: servers: no servers")
	}
	names := map[string]int{}
	for i, s := range c.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		if s.GPUs < 1 || s.GPUs > MaxServerGPUs {
			return fmt.Errorf("cluster: %s.gpus = %d: need 1 to %d", f, s.GPUs, MaxServerGPUs)
		}
		if !(s.CPUs > 0) || !(s.CPUs <= MaxServerCPUs) {
			return fmt.Errorf("cluster: %s.cpus = %v: need a positive number up to %g", f, s.CPUs, float64(MaxServerCPUs))
		}
		if s.MemBytes <= 0 || s.MemBytes > MaxServerMemBytes {
			return fmt.Errorf("cluster: %s.mem_bytes = %d: need a positive number up to %d (1 PiB)", f, s.MemBytes, int64(MaxServerMemBytes))
		}
		if s.CPUs < sensitivity.MinCPUs {
			return fmt.Errorf("cluster: %s.cpus = %v: below %g, the least CPU a job can be given", f, s.CPUs, sensitivity.MinCPUs)
		}
		if why := safefile.TextProblem(s.Name, safefile.MaxNameBytes); why != "" {
			return fmt.Errorf("cluster: %s.name = %q: %s", f, safefile.Clip(s.Name, 64), why)
		}
		if why := safefile.TextProblem(s.GPUType, safefile.MaxNameBytes); why != "" {
			return fmt.Errorf("cluster: %s.gpu_type = %q: %s", f, safefile.Clip(s.GPUType, 64), why)
		}
		if s.Rack < 0 {
			return fmt.Errorf("cluster: %s.rack = %d: must not be negative", f, s.Rack)
		}
		if s.Name == "" {
			return fmt.Errorf("cluster: %s.name: empty", f)
		}
		if s.GPUType != strings.TrimSpace(s.GPUType) {
			return fmt.Errorf("cluster: %s.gpu_type = %q: leading or trailing spaces", f, s.GPUType)
		}
		if j, dup := names[s.Name]; dup {
			return fmt.Errorf("cluster: %s.name = %q: same as servers[%d]", f, s.Name, j)
		}
		names[s.Name] = i
	}
	return nil
}

// Homogeneous builds n identical servers named server-0..server-(n-1), all
// in rack 0.
func Homogeneous(name string, n, gpus int, cpus float64, memBytes int64) Cluster {
	c := Cluster{Name: name}
	for i := 0; i < n; i++ {
		c.Servers = append(c.Servers, Server{Name: fmt.Sprintf("server-%d", i), GPUs: gpus, CPUs: cpus, MemBytes: memBytes})
	}
	return c
}

// Presets are Synergy's cluster .ini shapes (simulator/configs), with memory
// read as decimal GB (1 GB = 1e9 bytes):
//
//	default  default_cluster.ini  16 × (8 GPUs, 24 CPUs, 500 GB) = 128 GPUs
//	philly   philly_cluster.ini   64 × (8 GPUs, 24 CPUs, 500 GB) = 512 GPUs
//	cpu4     cluster_4.ini        16 × (8 GPUs, 32 CPUs, 500 GB)
//	cpu5     cluster_5.ini        16 × (8 GPUs, 40 CPUs, 500 GB)
//	cpu6     cluster_6.ini        16 × (8 GPUs, 48 CPUs, 500 GB)
func Preset(name string) (Cluster, error) {
	const gb = 1_000_000_000
	switch name {
	case "default":
		return Homogeneous(name, 16, 8, 24, 500*gb), nil
	case "philly":
		return Homogeneous(name, 64, 8, 24, 500*gb), nil
	case "cpu4":
		return Homogeneous(name, 16, 8, 32, 500*gb), nil
	case "cpu5":
		return Homogeneous(name, 16, 8, 40, 500*gb), nil
	case "cpu6":
		return Homogeneous(name, 16, 8, 48, 500*gb), nil
	}
	return Cluster{}, fmt.Errorf("no preset cluster %q (have %s)", name, strings.Join(PresetNames(), ", "))
}

// PresetNames lists the preset names.
func PresetNames() []string { return []string{"default", "philly", "cpu4", "cpu5", "cpu6"} }

// maxServers bounds a cluster file's size.
const maxServers = 100_000

// What one server may hold: far above any real server, low enough that a
// cluster's totals (maxServers of them) never overflow, so a cluster file
// cannot make "-2 GPUs" of a sum.
const (
	MaxServerGPUs     = 1024
	MaxServerCPUs     = 1 << 20
	MaxServerMemBytes = 1 << 50
)

// MaxClusterFileBytes bounds a cluster file (a cluster of any size fits in
// a few KiB of groups; fifty thousand servers listed one by one fit); a
// larger file is refused by its size.
const MaxClusterFileBytes = 16 << 20

// clusterFile is the JSON cluster file: a list of servers, or groups of
// identical servers, or both (servers first, then groups in order).
//
//	{"name": "lab", "groups": [{"count": 16, "gpus": 8, "cpus": 24, "mem_bytes": 500000000000}]}
type clusterFile struct {
	Name    string        `json:"name"`
	Servers []Server      `json:"servers"`
	Groups  []serverGroup `json:"groups"`
}

type serverGroup struct {
	Count int `json:"count"`
	// Prefix names the servers prefix-0, prefix-1, ...; default "server"
	// numbered across the whole cluster.
	Prefix   string  `json:"prefix"`
	Rack     int     `json:"rack"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes int64   `json:"mem_bytes"`
	// GPUType is the group's servers' gpu_type (optional).
	GPUType string `json:"gpu_type,omitempty"`
}

// ParseCluster decodes a JSON cluster file. Syntax and type errors name the
// line and column; unknown fields are refused; semantic errors name the
// field (servers[3].cpus, groups[0].count).
func ParseCluster(data []byte) (Cluster, error) {
	if err := safefile.NoDuplicateKeys(data); err != nil {
		return Cluster{}, fmt.Errorf("cluster: %w", err)
	}
	var f clusterFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Cluster{}, jsonError("cluster", data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, dec.InputOffset())
		return Cluster{}, fmt.Errorf("cluster: line %d col %d: trailing data after the JSON object", line, col)
	}
	if why := safefile.TextProblem(f.Name, safefile.MaxNameBytes); why != "" {
		return Cluster{}, fmt.Errorf("cluster: name = %q: %s", safefile.Clip(f.Name, 64), why)
	}
	// Every count is checked before it is added to or looped over: a
	// count near 2^63 would pass a check of a sum by overflowing it.
	if len(f.Servers) > maxServers {
		return Cluster{}, fmt.Errorf("cluster: servers: %d listed, more than %d", len(f.Servers), maxServers)
	}
	c := Cluster{Name: f.Name, Servers: f.Servers}
	for i, s := range c.Servers {
		if s.Name == "" {
			c.Servers[i].Name = fmt.Sprintf("server-%d", i)
		}
	}
	for gi, g := range f.Groups {
		if g.Count < 1 {
			return Cluster{}, fmt.Errorf("cluster: groups[%d].count = %d: need at least 1", gi, g.Count)
		}
		if g.Count > maxServers-len(c.Servers) { // no sum: it could overflow
			return Cluster{}, fmt.Errorf("cluster: groups[%d].count = %d: more than %d servers in all", gi, g.Count, maxServers)
		}
		if why := safefile.TextProblem(g.Prefix, safefile.MaxNameBytes); why != "" {
			return Cluster{}, fmt.Errorf("cluster: groups[%d].prefix = %q: %s", gi, safefile.Clip(g.Prefix, 64), why)
		}
		for k := 0; k < g.Count; k++ {
			name := fmt.Sprintf("server-%d", len(c.Servers))
			if g.Prefix != "" {
				name = fmt.Sprintf("%s-%d", g.Prefix, k)
			}
			c.Servers = append(c.Servers, Server{Name: name, Rack: g.Rack, GPUs: g.GPUs, CPUs: g.CPUs, MemBytes: g.MemBytes, GPUType: g.GPUType})
		}
	}
	if err := c.Validate(); err != nil {
		// Name group fields by their group when the server came from one.
		return Cluster{}, groupField(err, len(f.Servers), f.Groups)
	}
	return c, nil
}

// groupField rewrites "servers[i]" to "groups[g]" for servers made from a
// group, so the error names what the user wrote.
func groupField(err error, listed int, groups []serverGroup) error {
	msg := err.Error()
	var i int
	if _, scanErr := fmt.Sscanf(strings.TrimPrefix(msg, "cluster: "), "servers[%d]", &i); scanErr != nil || i < listed {
		return err
	}
	k := i - listed
	for gi, g := range groups {
		if k < g.Count {
			old := fmt.Sprintf("servers[%d]", i)
			return errors.New(strings.Replace(msg, old, fmt.Sprintf("groups[%d] (server %d)", gi, i), 1))
		}
		k -= g.Count
	}
	return err
}

// LoadCluster reads a cluster from a JSON file, or returns the preset of that
// name when arg names one and no such file exists.
func LoadCluster(arg string) (Cluster, error) {
	data, err := safefile.ReadFile(arg, MaxClusterFileBytes, "cluster")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if c, perr := Preset(arg); perr == nil {
				return c, nil
			}
			return Cluster{}, fmt.Errorf("cluster %q: neither a file nor a preset (%s)", arg, strings.Join(PresetNames(), ", "))
		}
		return Cluster{}, fmt.Errorf("read cluster file: %w", err)
	}
	c, err := ParseCluster(data)
	if err != nil {
		return Cluster{}, fmt.Errorf("%s: %w", arg, err)
	}
	if c.Name == "" {
		c.Name = arg // a path of the user's: shown quoted when unfit for a terminal
		if safefile.TextProblem(arg, safefile.MaxNameBytes) != "" {
			c.Name = strconv.QuoteToGraphic(safefile.Clip(arg, safefile.MaxNameBytes))
		}
	}
	return c, nil
}

// jsonError turns a decoding error into one naming the line and column and,
// for type errors, the field.
func jsonError(what string, data []byte, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Errorf("%s: line %d col %d: %w", what, line, col, err)
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		return fmt.Errorf("%s: line %d col %d: field %s: %s is not a %s", what, line, col, typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: empty file", what)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: unexpected end of file", what)
	}
	line, col := lineCol(data, dec.InputOffset())
	return fmt.Errorf("%s: line %d col %d: %w", what, line, col, err)
}

// lineCol converts a byte offset to 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
