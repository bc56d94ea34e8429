package profiler

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
)

// A job that writes no metrics stream is measured from its own log lines
// when the user says which lines count its progress (--progress-regex):
// every line of its output the expression matches is a point in time at
// which the job had run a known number of iterations. With a capture
// group, the group is that number, counted from the start of the pass (a
// number lower than the last one begins a new pass, as a training
// script's `| epoch 2 |  200/2983 batches |` does); without one, each
// matching line is one iteration. Each line becomes one iteration of the
// point's stream whose samples are the iterations since the line before
// times the batch (--batch), so the rate is what the job says it ran over
// the time it took, never a planned count.

// maxProgressLine bounds the part of one output line kept for matching.
const maxProgressLine = 64 << 10

// maxProgressPending bounds the matched lines held between two polls.
const maxProgressPending = 1 << 16

// progressScanner is an io.Writer on the job's output that turns the
// lines re matches into iterations. Safe for the runner's writer and the
// sweep's poller at once.
type progressScanner struct {
	re    *regexp.Regexp
	batch int
	now   func() time.Time

	mu      sync.Mutex
	line    []byte
	long    bool // the current line passed maxProgressLine: its rest is dropped
	pending []jobcontract.Iteration
	seen    bool // a line matched
	total   int  // iterations counted so far
	last    int  // the last count a capture group gave (-1: none yet)
	epoch   int
	bad     string // the first matched line whose group is not a count
}

func newProgressScanner(re *regexp.Regexp, batch int, now func() time.Time) *progressScanner {
	return &progressScanner{re: re, batch: max(batch, 1), now: now, last: -1}
}

// Write scans p's complete lines; it never fails (the job is never
// blocked by its reader).
func (p *progressScanner) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !p.long {
			room := maxProgressLine - len(p.line)
			if len(chunk) > room {
				chunk, p.long = chunk[:room], true
			}
			p.line = append(p.line, chunk...)
		}
		if i < 0 {
			break
		}
		p.match(p.line)
		p.line, p.long = p.line[:0], false
		b = b[i+1:]
	}
	return n, nil
}

// match counts one complete line.
func (p *progressScanner) match(line []byte) {
	// A carriage return ends a progress bar's redrawn line too.
	if i := bytes.LastIndexByte(line, '\r'); i >= 0 && i < len(line)-1 {
		line = line[i+1:]
	}
	m := p.re.FindSubmatch(line)
	if m == nil {
		return
	}
	step := 1
	if len(m) > 1 {
		count, err := strconv.Atoi(string(m[1]))
		if err != nil || count < 0 || count > 1<<40 {
			if p.bad == "" {
				p.bad = fmt.Sprintf("%.120q: the group %q is not a count of iterations", line, m[1])
			}
			return
		}
		switch {
		case p.last < 0:
			step = count
		case count < p.last: // a new pass, counted from its start
			step = count
			p.epoch++
		default:
			step = count - p.last
		}
		p.last = count
	}
	if step <= 0 || len(p.pending) >= maxProgressPending {
		return
	}
	p.total += step
	epoch := p.epoch
	p.pending = append(p.pending, jobcontract.Iteration{Iter: p.total - 1, Samples: step * p.batch,
		TS: unixSeconds(p.now()), Epoch: &epoch})
	p.seen = true
}

// take returns the iterations matched since the last call.
func (p *progressScanner) take() []jobcontract.Iteration {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.pending
	p.pending = nil
	return out
}

// badLine says why a matched line was not counted ("" when none was).
func (p *progressScanner) badLine() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad
}

// compileProgress checks --progress-regex: at most one capture group.
func compileProgress(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("progress-regex: %w", err)
	}
	if re.NumSubexp() > 1 {
		return nil, fmt.Errorf("progress-regex: %q has %d groups; give none (a matching line is one iteration) or one (the iterations run in the pass so far)", expr, re.NumSubexp())
	}
	return re, nil
}
