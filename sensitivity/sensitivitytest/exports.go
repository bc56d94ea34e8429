package sensitivitytest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Readers of synergy's export formats, as a consumer of the exports (a
// Slurm prolog, an admission webhook, a Synergy-grid reader) would read
// them: the tests of the exports and of `synergy matrix export` read what
// they wrote back with these.

// DecodeSynergyGrid reads a synergy-grid JSON strictly.
func DecodeSynergyGrid(r io.Reader) (*sensitivity.SynergyGrid, error) {
	dec := json.NewDecoder(io.LimitReader(r, sensitivity.MaxProfileBytes))
	dec.DisallowUnknownFields()
	var g sensitivity.SynergyGrid
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("synergy-grid: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("synergy-grid: %w", err)
	}
	return &g, nil
}

var slurmRE = regexp.MustCompile(`^--cpus-per-gpu=(\d+) --mem-per-gpu=(\d+)([MG])$`)

// ParseSlurm reads ExportSlurm's flags back: CPUs and bytes per GPU.
func ParseSlurm(s string) (cpusPerGPU int, memBytesPerGPU int64, err error) {
	m := slurmRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, 0, fmt.Errorf("slurm flags %q: want --cpus-per-gpu=N --mem-per-gpu=N[MG]", s)
	}
	cpusPerGPU, _ = strconv.Atoi(m[1])
	n, _ := strconv.ParseInt(m[2], 10, 64)
	unit := int64(mib)
	if m[3] == "G" {
		unit = 1 << 30
	}
	return cpusPerGPU, n * unit, nil
}

// K8sResources is what ParseK8s reads back.
type K8sResources struct {
	Requests, Limits map[string]string
}

// ParseK8s reads the resources block ExportK8s writes (that shape only:
// two levels of two-space indentation, quoted scalars, # comments).
func ParseK8s(r io.Reader) (*K8sResources, error) {
	out := &K8sResources{Requests: map[string]string{}, Limits: map[string]string{}}
	var sect map[string]string
	sc := bufio.NewScanner(r)
	n := 0
	seenRoot := false
	for sc.Scan() {
		n++
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch {
		case line == "resources:":
			seenRoot = true
		case line == "  requests:":
			sect = out.Requests
		case line == "  limits:":
			sect = out.Limits
		case strings.HasPrefix(line, "    ") && sect != nil:
			k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
			if !ok {
				return nil, fmt.Errorf("k8s line %d: %q is not key: value", n, line)
			}
			uq, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("k8s line %d: value %s is not a quoted string", n, v)
			}
			sect[k] = uq
		default:
			return nil, fmt.Errorf("k8s line %d: unexpected %q", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seenRoot {
		return nil, errors.New("k8s: no resources: block")
	}
	return out, nil
}
