package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Markers in a job's comment.
const (
	markPrefix  = "synergy:"
	markProfile = "synergy:profile="
	markPlaced  = "synergy:placed="
	markWaiting = "synergy:waiting="
	markService = "synergy:service="
	// maxReason bounds the reason written back (Slurm keeps the comment
	// in its state; squeue prints it whole).
	maxReason = 400
)

// Placement is what the bridge gave a job on one node.
type Placement struct {
	Node   string
	GPUs   int
	CPUs   int
	MemMiB int64
}

func (p Placement) String() string {
	return fmt.Sprintf("%s/gpus=%d/cpus=%d/mem_mib=%d", p.Node, p.GPUs, p.CPUs, p.MemMiB)
}

// Mark is the bridge's state in a job's comment:
//
//	[user text ]synergy:profile=PATH[ synergy:placed=NODE/gpus=G/cpus=C/mem_mib=M | synergy:waiting=REASON]
//
// PATH may hold spaces but not " synergy:".
type Mark struct {
	// User is the comment's text before the first marker.
	User    string
	Profile string
	Placed  *Placement
	Waiting string
	// Service is the job's attained service in seconds of runs that the
	// bridge has booked (synergy:service=SECONDS@START); ServiceStart is the
	// start time (Unix seconds) of the last run booked in it, so that a run
	// is never booked twice whatever step a bridge is killed at.
	Service      float64
	ServiceStart int64
}

// ParseMark reads a job's comment. A malformed placed marker is an error
// (the bridge wrote it; a person editing it must not make the bridge
// guess).
func ParseMark(comment string) (Mark, error) {
	var m Mark
	i := strings.Index(comment, markPrefix)
	if i < 0 {
		m.User = strings.TrimSpace(comment)
		return m, nil
	}
	m.User = strings.TrimSpace(comment[:i])
	fields := strings.Split(comment[i:], " "+markPrefix)
	for k := 1; k < len(fields); k++ {
		fields[k] = markPrefix + fields[k]
	}
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, markProfile):
			m.Profile = strings.TrimSpace(f[len(markProfile):])
		case strings.HasPrefix(f, markPlaced):
			p, err := parsePlacement(strings.TrimSpace(f[len(markPlaced):]))
			if err != nil {
				return m, fmt.Errorf("comment %q: %w", comment, err)
			}
			m.Placed = &p
		case strings.HasPrefix(f, markWaiting):
			m.Waiting = strings.TrimSpace(f[len(markWaiting):])
		case strings.HasPrefix(f, markService):
			v := strings.TrimSpace(f[len(markService):])
			sec, start, ok := strings.Cut(v, "@")
			x, err1 := strconv.ParseFloat(sec, 64)
			y, err2 := strconv.ParseInt(start, 10, 64)
			if !ok || err1 != nil || err2 != nil || !(x >= 0) || x > 1e12 || y < 0 {
				return m, fmt.Errorf("comment %q: %s%s: want SECONDS@START", comment, markService, v)
			}
			m.Service, m.ServiceStart = x, y
		default:
			return m, fmt.Errorf("comment %q: unknown marker %q (known: %s, %s, %s, %s)", comment, firstWord(f), markProfile, markService, markPlaced, markWaiting)
		}
	}
	return m, nil
}

func parsePlacement(s string) (Placement, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 || parts[0] == "" {
		return Placement{}, fmt.Errorf("%s%s: want NODE/gpus=G/cpus=C/mem_mib=M", markPlaced, s)
	}
	p := Placement{Node: parts[0]}
	vals := []*int64{new(int64), new(int64), &p.MemMiB}
	for k, key := range []string{"gpus", "cpus", "mem_mib"} {
		v, ok := strings.CutPrefix(parts[k+1], key+"=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 {
			return Placement{}, fmt.Errorf("%s%s: %q is not %s=N", markPlaced, s, parts[k+1], key)
		}
		*vals[k] = n
	}
	p.GPUs, p.CPUs = int(*vals[0]), int(*vals[1])
	return p, nil
}

// String writes the mark back as a comment.
func (m Mark) String() string {
	var parts []string
	if m.User != "" {
		parts = append(parts, m.User)
	}
	if m.Profile != "" {
		parts = append(parts, markProfile+m.Profile)
	}
	if m.Service > 0 || m.ServiceStart > 0 {
		parts = append(parts, markService+strconv.FormatFloat(m.Service, 'f', 0, 64)+"@"+strconv.FormatInt(m.ServiceStart, 10))
	}
	switch {
	case m.Placed != nil:
		parts = append(parts, markPlaced+m.Placed.String())
	case m.Waiting != "":
		w := strings.Join(strings.Fields(m.Waiting), " ")
		w = strings.ReplaceAll(w, markPrefix, "synergy ")
		if len(w) > maxReason {
			n := maxReason - 3
			for n > 0 && !utf8.RuneStart(w[n]) {
				n--
			}
			w = w[:n] + "..."
		}
		parts = append(parts, markWaiting+w)
	}
	return strings.Join(parts, " ")
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " ="); i >= 0 {
		return s[:i+1]
	}
	return s
}
