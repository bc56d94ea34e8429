package scheduler

import (
	"fmt"
	"strconv"

	"github.com/synergy-sched/synergy/internal/units"
)

// ServerAlloc is what a job holds on one server.
type ServerAlloc struct {
	Server   int     `json:"server"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

// Allocation is what a job holds for one round.
type Allocation struct {
	JobID   int           `json:"job_id"`
	Servers []ServerAlloc `json:"servers"`
	// Speedup is the job's throughput on this allocation relative to the
	// GPU-proportional share; the round credits it
	// floor(round / (IterSeconds / Speedup)) iterations.
	Speedup float64 `json:"speedup"`
	// Demoted is true when the job got its GPU-proportional share instead
	// of its ideal demand (tune dropped it, or reverted it to make room).
	Demoted bool `json:"demoted,omitempty"`
	// Reverted is true when a later job's placement took this job's
	// surplus back (Synergy-TUNE's peer adjustment).
	Reverted bool `json:"reverted,omitempty"`
}

// Total sums the allocation over servers.
func (a *Allocation) Total() Resources {
	var t Resources
	for _, s := range a.Servers {
		t = t.Add(Resources{GPUs: s.GPUs, CPUs: s.CPUs, MemBytes: s.MemBytes})
	}
	return t
}

// Shortfall says which resource did not fit where, in the manner of
// kube-scheduler's InsufficientResource: "cpu: need 9, free 4 on server-3".
type Shortfall struct {
	Resource string  `json:"resource"` // "gpu", "cpu" or "mem"
	Need     float64 `json:"need"`
	Free     float64 `json:"free"`
	// Server is the server's name, or "" for the cluster as a whole.
	Server string `json:"server,omitempty"`
}

func (s Shortfall) String() string {
	where := "in the cluster"
	if s.Server != "" {
		where = "on " + s.Server
	}
	need, free := num(s.Need), num(s.Free)
	if s.Resource == "mem" {
		need, free = gbs(s.Need), gbs(s.Free)
	}
	return fmt.Sprintf("%s: need %s, free %s %s", s.Resource, need, free, where)
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// gbs renders bytes as decimal gigabytes with at most two decimals
// ("62.5GB", "0.07GB").
func gbs(b float64) string { return units.FormatGB(b) }

// Decision is the outcome for one job in one round.
type Decision struct {
	JobID  int  `json:"job_id"`
	Placed bool `json:"placed"`
	// Allocation is set when Placed.
	Allocation *Allocation `json:"allocation,omitempty"`
	// Shortfalls say why the job, or its ideal demand, did not fit.
	Shortfalls []Shortfall `json:"shortfalls,omitempty"`
	// Note says what the strategy did ("ideal demand", "dropped to fair
	// share: ideal did not fit", "reverted 2 peers to fair share").
	Note string `json:"note,omitempty"`
}

// Reason is the decision in one line.
func (d Decision) Reason() string {
	s := d.Note
	for i, sf := range d.Shortfalls {
		if i == 0 && s != "" {
			s += ": "
		} else if i > 0 {
			s += "; "
		}
		s += sf.String()
	}
	return s
}
