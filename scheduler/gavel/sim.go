package gavel

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Gavel's simulator constants.
const (
	DefaultRoundS        = 360.0  // time_per_iteration
	DefaultMinResetS     = 1920.0 // minimum_time_between_allocation_resets
	maxFailedAttempts    = 5      // MAX_FAILED_ATTEMPTS
	neverRunPriorityMult = 1e9    // priority of a job that has received no time
)

// Config is one simulation.
type Config struct {
	Cluster   ClusterSpec
	RoundS    float64 // round length (Gavel's 360 s by default)
	MinResetS float64 // allocation recomputed at most this often (1920 s)
	Seed      uint64  // Gavel's --seed: fifo's RNG is seeded with it, the type shuffler with seed+5
	// Window, when set, ends a run (generated or a trace) once jobs
	// First..Last have completed (Gavel's jobs_to_complete) and is what
	// the results average.
	Window *simcore.Window
	// Check verifies the invariants every round (no type over capacity,
	// no worker twice, allocation rows ≤ 1 for the non-FIFO policies).
	Check bool
	// MaxS, when > 0, ends the run once simulated time passes it (a
	// saturated continuous workload never finishes its window; Gavel's
	// sweeps use a timeout instead). The result says Truncated.
	MaxS float64
	// Ideal applies the allocation exactly (fluid, no rounds) instead of
	// the round mechanism.
	Ideal bool
	// Prices, when set, charge every micro-task its GPU type's price
	// (results: each job's cost and the total) and are what the cost
	// policy reads.
	Prices *Prices
	// Log, when set, gets one line per scheduled micro-task ("<t> job <id>
	// <type> workers <ids>") for debugging against Gavel's log.
	Log io.Writer
	// PairEstimator, when set, gives the pair throughputs that packing
	// policies see (Gavel's throughput estimator, *estimator); pairs still
	// run at the throughputs file's values, as in Gavel's simulator.
	PairEstimator PairEstimator
	// Shaper, when set, gives each round's jobs their CPUs and memory and
	// scales their throughput by it (scheduler/joint); nil: the file's
	// rates, as Gavel.
	Shaper Shaper
	// Progress, when set, hears how a long run goes: the rounds and the
	// simulated clock every few seconds of wall-clock time (note ""), and
	// a note when one allocation has run for slowAllocation and when it
	// ends. It may be called from another goroutine.
	Progress func(rounds int, nowS float64, note string)
}

// slowAllocation is how long one allocation runs before Progress hears of
// it (an LP over thousands of queued jobs can take minutes).
const slowAllocation = 5 * time.Second

// PairEstimator estimates co-located throughputs ([a's, b's] steps/s per
// worker type); *estimator is one.
type PairEstimator interface {
	PairThroughputs(a, b JobType, types []string) ([][2]float64, error)
}

// inWindow says whether id is in w; a nil window (no window) holds every id.
func inWindow(w *simcore.Window, id int) bool { return w == nil || w.Has(id) }

type jobState struct {
	id       int
	job      Job
	typeID   int       // with a packing policy: the job type's number (simulator.typeID)
	tput     []float64 // per sorted type
	stepsRun float64
	start    float64
	latest   float64
	failures int
}

// ckey names a schedulable entry: a single job (b = -1) or a pair of
// co-located jobs (a < b), as Gavel's JobIdPair; singles sort before
// pairs, pairs by (a, b).
type ckey struct{ a, b int }

func single(id int) ckey { return ckey{id, -1} }

// seqShift places a job's id above its partner's in seqOf.
const seqShift = 32

// seqOf is k's creation order: Gavel makes a job's entry alone, then its
// pairs with the active jobs of its scale factor by ascending partner, at
// its arrival (ids are arrival order), so the order is (later job, pairs
// after the single entry, earlier job). An entry that is not yet made
// (a lazy pair) has its place all the same.
func seqOf(k ckey) int {
	if k.isPair() {
		return k.b<<seqShift | (k.a + 1)
	}
	return k.a << seqShift
}

// keyOfSeq is seqOf's inverse.
func keyOfSeq(seq int) ckey {
	b, lo := seq>>seqShift, seq&(1<<seqShift-1)
	if lo == 0 {
		return single(b)
	}
	return ckey{lo - 1, b}
}
func (k ckey) isPair() bool { return k.b >= 0 }
func (k ckey) less(o ckey) bool {
	if k.isPair() != o.isPair() {
		return !k.isPair()
	}
	if k.a != o.a {
		return k.a < o.a
	}
	return k.b < o.b
}
func (k ckey) members() []int {
	if k.isPair() {
		return []int{k.a, k.b}
	}
	return []int{k.a}
}

// entry is what Gavel's priorities, deficits and time counters are kept
// for: a single job, or (for packing policies) a pair of jobs.
type entry struct {
	key       ckey
	tput      [][]float64  // per sorted type, per member
	seen      [][2]float64 // a pair's estimated throughputs, what the policy sees (nil: tput)
	timeSoFar []float64    // since the last reset
	priority  []float64
	deficit   []float64
	row       []float64 // s.alloc.row(key) (nil: no row, or a zero row left out), kept by setAlloc
	// seq orders entries by creation (Gavel's priority-dict order: the
	// selection's last tie-break), seqOf(key).
	seq int
	// gone: a member finished (the entry waits in s.entries to be
	// compacted away); live: the row has a non-zero value (the entry is in
	// s.live); dirty: its time counters may differ from the reset's half
	// round (it is in s.dirty).
	gone, live, dirty bool
}

// nonZero says whether a row gives time on some type.
func nonZero(row []float64) bool {
	for _, v := range row {
		if v != 0 {
			return true
		}
	}
	return false
}

type assignment struct {
	key     ckey
	workers []int
}

type running struct {
	key     ckey
	workers []int
	steps   []float64 // per member
	finish  float64
}

// simulator is Gavel's Scheduler in simulation mode, for single jobs (no
// space sharing).
type simulator struct {
	cfg     Config
	policy  Policy
	types   []string // sorted by name: worker registration and allocation order
	order   []int    // round order: indices into types, in cluster spec order
	workers []int    // GPUs per sorted type
	servers [][][]int
	wtype   []int // worker id → sorted type index
	wserver []int // worker id → server index within its type
	cumBusy []float64
	wtime   []float64 // worker time so far per type, since the last reset
	jobs    map[int]*jobState
	active  []int // active job ids, ascending
	// entries: the made entries, gone ones among them until compacted; in
	// seq order unless lazy (a lazy pair is appended when made).
	entries []*entry
	// live is the entries whose row has a non-zero value, in seq order:
	// the others (nearly every pair of a packing policy) have priority 0
	// and allocation 0 on every type, so that only these need priorities
	// and keys every round. dirty is the entries whose time counters
	// moved since the last reset (new pairs, entries that ran): only
	// these and the live ones change deficits at a reset.
	live, dirty []*entry
	rowed       []*entry            // the entries whose row is not nil
	byJob       map[int]*jobEntries // job → its entries (alone and in pairs)
	nextSeq     int                 // seqOf of the next job's entry alone
	// lazy: a sparse packing policy without an estimator; its pair entries
	// are made only when a pair gets a row or is picked (materialise).
	// Until then a pair of active jobs of one scale factor has a known
	// state: no row, priority 0, time counters 0 and deficit 0 before the
	// first reset after it was due (seq < resetSeq), half a round each
	// after it. bySF counts the active jobs per scale factor.
	lazy               bool
	resetSeq           int
	bySF               map[int]int
	typeIDs            map[JobType]int
	pairTputs          map[[2]int][][]float64 // by the two job types' typeIDs
	nGone              int                    // gone entries still in s.entries
	packing            PackingPolicy
	alloc              allocation
	last               float64 // last reset time
	needUpd            bool
	clock              *simcore.Clock // the run's, moved by the shared loop
	shuffler           *PyRandom
	cur                []assignment
	leaseExt, leaseOpp int
	res                *simcore.Result
	// window counts the window's jobs as they arrive and end (a window
	// ends the run once its jobs are done).
	window simcore.WindowCount
	allocs int
	// Buffers a round reuses: placeType's server positions and taken
	// workers, scheduleRound's previous assignments and placement positions
	// (dispatch reuses prevBuf), selectJobs' scheduled jobs.
	nextBuf []int
	taken   []bool
	prevBuf map[ckey]assignment
	posBuf  map[ckey]int
	done    jobSet
}

func newSimulator(cfg Config, p Policy) *simulator {
	if cfg.RoundS == 0 {
		cfg.RoundS = DefaultRoundS
	}
	if cfg.MinResetS == 0 {
		cfg.MinResetS = DefaultMinResetS
	}
	s := &simulator{cfg: cfg, policy: p, types: cfg.Cluster.sortedTypes(), jobs: map[int]*jobState{}, byJob: map[int]*jobEntries{},
		shuffler: NewPyRandom(cfg.Seed + 5), res: &simcore.Result{}, clock: simcore.NewClock(0)}
	idx := map[string]int{}
	for i, t := range s.types {
		idx[t] = i
	}
	byName := map[string]int{}
	for i, t := range cfg.Cluster.Types {
		byName[t] = i
	}
	s.workers = make([]int, len(s.types))
	s.servers = make([][][]int, len(s.types))
	s.wtime = make([]float64, len(s.types))
	for ti, t := range s.types {
		ci := byName[t]
		per := cfg.Cluster.GPUsPerServer[ci]
		for k := 0; k < cfg.Cluster.GPUs[ci]/per; k++ {
			var ids []int
			for g := 0; g < per; g++ {
				ids = append(ids, len(s.wtype))
				s.wtype = append(s.wtype, ti)
				s.wserver = append(s.wserver, k)
			}
			s.servers[ti] = append(s.servers[ti], ids)
			s.workers[ti] += per
		}
	}
	for _, t := range cfg.Cluster.Types {
		if s.workers[idx[t]] > 0 {
			s.order = append(s.order, idx[t])
		}
	}
	s.cumBusy = make([]float64, len(s.wtype))
	s.packing, _ = p.(PackingPolicy)
	_, sparse := p.(sparsePackingPolicy)
	s.lazy = sparse && cfg.PairEstimator == nil
	s.bySF = map[int]int{}
	if cfg.Window != nil {
		s.window.Window = *cfg.Window
	}
	return s
}

// addJob is Gavel's add_job at timestamp at; a packing policy also gets
// an entry for the job paired with every active job of its scale factor.
func (s *simulator) addJob(j Job, tp *Throughputs, at float64) error {
	id := len(s.res.Jobs)
	if id >= MaxJobs {
		return fmt.Errorf("t=%.1f s: job %d: more than %d jobs arrived (gavel.MaxJobs): a window that a saturated load never finishes? --max-hours bounds the run", at, id, MaxJobs)
	}
	row, err := tp.Row(j.Key(), s.types)
	if err != nil {
		return fmt.Errorf("job %d: %w", id, err)
	}
	js := &jobState{id: id, job: j, tput: row, start: at}
	alone := make([][]float64, len(s.types))
	for t := range alone {
		alone[t] = row[t : t+1 : t+1]
	}
	s.newEntry(single(id), s.cfg.RoundS/2, alone)
	if s.packing != nil {
		js.typeID = s.typeID(j.Key())
		for _, o := range s.active {
			other := s.jobs[o]
			if other.job.ScaleFactor != j.ScaleFactor {
				continue
			}
			pt, err := s.colocated(tp, other, js)
			if err != nil {
				return fmt.Errorf("job %d: %w", id, err)
			}
			if s.lazy {
				continue
			}
			pe := s.newEntry(ckey{o, id}, 0, pt)
			if s.cfg.PairEstimator != nil {
				if pe.seen, err = s.cfg.PairEstimator.PairThroughputs(other.job.Key(), j.Key(), s.types); err != nil {
					return fmt.Errorf("job %d: %w", id, err)
				}
			}
		}
	}
	s.jobs[id] = js
	s.active = append(s.active, id)
	s.bySF[j.ScaleFactor]++
	s.nextSeq = seqOf(single(id + 1))
	s.window.Arrive(id)
	s.needUpd = true
	s.res.Jobs = append(s.res.Jobs, simcore.JobRecord{ID: id, JobType: j.JobType, GPUs: j.ScaleFactor,
		Priority: j.PriorityWeight, ArrivalS: at})
	if j.SLO > 0 && j.DurationS > 0 {
		d := j.SLO*j.DurationS + at
		s.res.Jobs[id].DeadlineS = &d
	}
	return nil
}

// typeID numbers a job type (colocated's cache is by these numbers).
func (s *simulator) typeID(k JobType) int {
	if id, ok := s.typeIDs[k]; ok {
		return id
	}
	if s.typeIDs == nil {
		s.typeIDs = map[JobType]int{}
	}
	s.typeIDs[k] = len(s.typeIDs)
	return len(s.typeIDs) - 1
}

// colocated is the throughputs of a and b (per type, [a's, b's]) when they
// share GPUs, from the file's co-located entries: one read-only table per
// pair of job types (a run makes millions of pair entries of a few hundred
// kinds).
func (s *simulator) colocated(tp *Throughputs, a, b *jobState) ([][]float64, error) {
	k := [2]int{a.typeID, b.typeID}
	if pt, ok := s.pairTputs[k]; ok {
		return pt, nil
	}
	pt := make([][]float64, len(s.types))
	for t, wt := range s.types {
		p, ok := tp.Colocated[wt][a.job.Key()][b.job.Key()]
		if !ok {
			return nil, fmt.Errorf("throughputs have no co-located entry for %s with %s on %q (packing policies need them)", a.job.Key(), b.job.Key(), wt)
		}
		pt[t] = []float64{p[0], p[1]}
	}
	if s.pairTputs == nil {
		s.pairTputs = map[[2]int][][]float64{}
	}
	s.pairTputs[k] = pt
	return pt, nil
}

// newEntry makes k's entry with tput (per type, per member; read-only, may
// be shared) and its time counters at time0.
func (s *simulator) newEntry(k ckey, time0 float64, tput [][]float64) *entry {
	n := len(s.types)
	buf := make([]float64, 3*n)
	e := &entry{key: k, tput: tput, timeSoFar: buf[:n:n], priority: buf[n : 2*n : 2*n], deficit: buf[2*n:]}
	for t := range e.timeSoFar {
		e.timeSoFar[t] = time0
	}
	e.row = s.alloc.row(k)
	if e.row != nil {
		s.rowed = append(s.rowed, e)
	}
	e.seq = seqOf(k)
	s.register(e)
	if nonZero(e.row) {
		e.live = true
		s.live = append(s.live, e)
	}
	return e
}

// register adds a made entry to the entries and its jobs' lists (by
// partner, ascending), and marks it dirty if its counters are not at the
// half round.
func (s *simulator) register(e *entry) {
	k := e.key
	s.entries = append(s.entries, e)
	for _, m := range k.members() {
		je := s.byJob[m]
		if je == nil {
			je = &jobEntries{}
			s.byJob[m] = je
		}
		p := k.a
		if p == m {
			p = k.b
		}
		i := len(je.partner)
		if i > 0 && je.partner[i-1] > p { // a lazy pair made late
			i, _ = slices.BinarySearch(je.partner, p)
		}
		je.partner = slices.Insert(je.partner, i, p)
		je.es = slices.Insert(je.es, i, e)
	}
	if e.timeSoFar[0] != s.cfg.RoundS/2 {
		s.markDirty(e)
	}
}

// pairDue says whether a and b (a < b) are active jobs of one scale
// factor: their pair entry exists, made or (lazy) not.
func (s *simulator) pairDue(a, b int) bool {
	ja, jb := s.jobs[a], s.jobs[b]
	return ja != nil && jb != nil && a < b && ja.job.ScaleFactor == jb.job.ScaleFactor
}

// virtualPair is the state of lazy pair k (due, not made), not registered.
func (s *simulator) virtualPair(k ckey) *entry {
	n := len(s.types)
	buf := make([]float64, 3*n)
	e := &entry{key: k, tput: s.pairTputs[[2]int{s.jobs[k.a].typeID, s.jobs[k.b].typeID}],
		timeSoFar: buf[:n:n], priority: buf[n : 2*n : 2*n], deficit: buf[2*n:], seq: seqOf(k)}
	if e.seq < s.resetSeq {
		half := s.cfg.RoundS / 2
		for t := range n {
			e.timeSoFar[t] = half
			e.deficit[t] = half // 0 + (0 − (0 − half)), as resetTimeRunSoFar adds it
		}
	}
	return e
}

// materialise makes lazy pair k's entry (k due, not made).
func (s *simulator) materialise(k ckey) *entry {
	e := s.virtualPair(k)
	s.register(e)
	return e
}

// jobEntries is a job's entries: alone (partner -1), then its pairs by
// partner: those made at its arrival with the active jobs (ids below its
// own, ascending), then those made as later jobs arrived (ids above,
// ascending). Gone pairs stay until the job leaves too.
type jobEntries struct {
	partner []int
	es      []*entry
}

// entryOf is k's entry, nil if it is gone.
func (s *simulator) entryOf(k ckey) *entry {
	if !k.isPair() {
		if je := s.byJob[k.a]; je != nil && !je.es[0].gone {
			return je.es[0]
		}
		return nil
	}
	je := s.byJob[k.b]
	if je == nil {
		return nil
	}
	i, ok := slices.BinarySearch(je.partner, k.a)
	if ok && !je.es[i].gone {
		return je.es[i]
	}
	return nil
}

// markDirty notes that e's time counters moved since the last reset.
func (s *simulator) markDirty(e *entry) {
	if !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, e)
	}
}

func (s *simulator) removeJob(id int, failed bool) {
	js := s.jobs[id]
	delete(s.jobs, id)
	s.window.Finish(id)
	k := sort.SearchInts(s.active, id)
	s.active = append(s.active[:k], s.active[k+1:]...)
	// The job's entries are marked gone and compacted away once they are
	// half the list (the order of the rest, seq, is kept).
	s.bySF[js.job.ScaleFactor]--
	for _, e := range s.byJob[id].es {
		if !e.gone {
			e.gone = true
			s.nGone++
		}
	}
	delete(s.byJob, id) // the partners' lists keep the gone pairs until they leave too
	s.live = dropGone(s.live)
	if 2*s.nGone > len(s.entries) {
		s.entries = dropGone(s.entries)
		s.nGone = 0
	}
	r := &s.res.Jobs[id]
	if failed {
		r.Failed = true
	} else {
		jct := js.latest - js.start
		f := r.ArrivalS + jct
		r.JCTS, r.FinishS = &jct, &f
	}
	s.needUpd = true
}

// dropGone filters out the gone entries, keeping the order.
func dropGone(es []*entry) []*entry {
	kept := es[:0]
	for _, e := range es {
		if !e.gone {
			kept = append(kept, e)
		}
	}
	clear(es[len(kept):])
	return kept
}

// state is what the policy sees.
func (s *simulator) state() *State {
	st := &State{Types: s.types, Workers: s.workers, Now: s.clock.Now(), Jobs: make([]StateJob, 0, len(s.active))}
	if p := s.cfg.Prices; p != nil {
		for _, t := range s.types {
			st.Prices = append(st.Prices, p.At(t, s.clock.Now()))
		}
	}
	for _, id := range s.active {
		js := s.jobs[id]
		sj := StateJob{ID: id, Key: js.job.Key(), Throughput: js.tput, ScaleFactor: js.job.ScaleFactor,
			PriorityWeight: js.job.PriorityWeight, RemainingSteps: js.job.TotalSteps - js.stepsRun,
			TotalSteps: js.job.TotalSteps, TimeSinceStart: s.clock.Now() - js.start}
		if d := s.res.Jobs[id].DeadlineS; d != nil {
			sj.HasSLO, sj.DeadlineS = true, *d
		}
		st.Jobs = append(st.Jobs, sj)
	}
	return st
}

// resetTimeRunSoFar is Gavel's _reset_time_run_so_far: deficits take the
// time each entry should have had under the allocation minus what it got.
// An entry with no time on any type and whose counters stand at the half
// round (neither new nor run since the last reset) gains should − received
// = 0 − 0: only the live and dirty entries are visited. Each entry still
// adds its half round to the type's time, as Gavel's loop does.
func (s *simulator) resetTimeRunSoFar() {
	elapsed := s.clock.Now() - s.last
	half := s.cfg.RoundS / 2
	n := len(s.entries) - s.nGone
	if s.lazy { // every job alone and every pair due
		n = len(s.active)
		for _, c := range s.bySF {
			n += c * (c - 1) / 2
		}
	}
	for t := range s.types {
		s.wtime[t] = halves(half, n)
	}
	visit := func(e *entry) {
		if e.gone {
			return
		}
		for t := range s.types {
			received := e.timeSoFar[t] - half
			should := 0.0
			if e.row != nil { // s.alloc[e.key]
				should = e.row[t] * elapsed
			}
			e.deficit[t] += should - received
			e.timeSoFar[t] = half
		}
	}
	for _, e := range s.live {
		visit(e)
	}
	for _, e := range s.dirty {
		if !e.live {
			visit(e)
		}
		e.dirty = false
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	s.last = s.clock.Now()
	s.resetSeq = s.nextSeq
}

// halves is half added n times from 0, as Gavel's loop sums it: n × half
// where that is exact (a whole half round, as 360 s rounds give, and a
// sum below 2^53), the additions otherwise.
func halves(half float64, n int) float64 {
	if half == math.Trunc(half) && math.Abs(half)*float64(n) < 1<<53 {
		return half * float64(n)
	}
	sum := 0.0
	for range n {
		sum += half
	}
	return sum
}

// allocation is the policy's answer: the single jobs' rows and the pairs'.
// With zeroPairs (a sparse packing policy), a pair entry made before the
// allocation (seq < seq) and left out of pairs has a zero row: its
// priority and time are 0 as without a row, but a round that picks it
// places it, as Gavel places a pair whose row is zeros.
type allocation struct {
	single    Allocation
	pairs     map[[2]int][]float64
	zeroPairs bool
	seq       int
}

// row is k's row; nil where the allocation has none or a zero row left out.
func (a allocation) row(k ckey) []float64 {
	if k.isPair() {
		return a.pairs[[2]int{k.a, k.b}]
	}
	return a.single[k.a]
}

// hasRow says whether e has a row in the allocation, zeros included (a
// round places only those).
func (s *simulator) hasRow(e *entry) bool {
	return e.row != nil || (s.alloc.zeroPairs && e.key.isPair() && e.seq < s.alloc.seq)
}

// pairLookup gives a pair's throughputs (a < b; per type, [a's, b's]), false for
// a pair that is not offered.
type pairLookup func(a, b int) ([][2]float64, bool)

// sparsePackingPolicy is a packing policy that looks up the pairs it reads
// instead of a list of every pair, and leaves the pairs without time out
// of its map: each pair offered and left out has a zero row (gandiva reads
// a few hundred of hundreds of thousands of pairs and gives time to fewer).
type sparsePackingPolicy interface {
	PackingPolicy
	allocateSparse(s *State, pair pairLookup) (Allocation, map[[2]int][]float64, error)
}

// pairTput is the throughputs of pair entry e as a packing policy sees
// them (the estimator's, when there is one).
func (s *simulator) pairTput(e *entry, out [][2]float64) {
	for t := range s.types {
		out[t] = [2]float64{e.tput[t][0], e.tput[t][1]}
		if e.seen != nil {
			out[t] = e.seen[t]
		}
	}
}

// allocate asks the policy for an allocation of the active jobs (and, for
// a packing policy, their pairs).
func (s *simulator) allocate() (allocation, error) {
	st := s.state()
	if sp, ok := s.packing.(sparsePackingPolicy); ok {
		a, pa, err := sp.allocateSparse(st, func(a, b int) ([][2]float64, bool) {
			e := s.entryOf(ckey{a, b})
			if e == nil && s.lazy && s.pairDue(a, b) {
				e = &entry{tput: s.pairTputs[[2]int{s.jobs[a].typeID, s.jobs[b].typeID}]}
			}
			if e == nil {
				return nil, false
			}
			tp := make([][2]float64, len(s.types))
			s.pairTput(e, tp)
			return tp, true
		})
		return allocation{single: a, pairs: pa, zeroPairs: true, seq: s.nextSeq}, err
	}
	if s.packing != nil {
		// One backing array for every pair's throughputs: a packing
		// policy sees hundreds of thousands of pairs.
		nt, n := len(s.types), 0
		for _, e := range s.entries {
			if e.key.isPair() && !e.gone {
				n++
			}
		}
		back := make([][2]float64, nt*n)
		pairs := make([]PairState, 0, n)
		for _, e := range s.entries {
			if e.key.isPair() && !e.gone {
				p := PairState{A: e.key.a, B: e.key.b, Throughput: back[:nt:nt]}
				back = back[nt:]
				s.pairTput(e, p.Throughput)
				pairs = append(pairs, p)
			}
		}
		a, pa, err := s.packing.AllocatePacked(st, pairs)
		return allocation{single: a, pairs: pa, seq: s.nextSeq}, err
	}
	a, err := s.policy.Allocate(st)
	return allocation{single: a, seq: s.nextSeq}, err
}

// timedAllocate is allocate, with Config.Progress told of an allocation
// that runs for slowAllocation or longer (while it runs, and when it ends).
func (s *simulator) timedAllocate() (allocation, error) {
	if s.cfg.Progress == nil {
		return s.allocate()
	}
	start, now, n, rounds := time.Now(), s.clock.Now(), len(s.active), s.res.Rounds
	t := time.AfterFunc(slowAllocation, func() {
		s.cfg.Progress(rounds, now, fmt.Sprintf("allocation over %d active jobs running for %v", n, slowAllocation))
	})
	a, err := s.allocate()
	if !t.Stop() {
		s.cfg.Progress(rounds, now, fmt.Sprintf("allocation over %d active jobs took %v", n, time.Since(start).Round(time.Second/10)))
	}
	return a, err
}

// setAlloc installs an allocation and caches each entry's row (the round
// loop reads it for every live entry, type and round): the last
// allocation's rows are undone and the new one's set by key, so that an
// allocation costs its rows, not the entries (hundreds of thousands of
// pairs with packing policies).
func (s *simulator) setAlloc(a allocation) {
	s.alloc = a
	for _, e := range s.rowed {
		e.row = nil
		if e.live {
			e.live = false
			clear(e.priority)
		}
	}
	clear(s.rowed)
	s.rowed, s.live = s.rowed[:0], s.live[:0]
	set := func(k ckey, row []float64) {
		if row == nil {
			return
		}
		e := s.entryOf(k)
		if e == nil && s.lazy && k.isPair() && s.pairDue(k.a, k.b) {
			e = s.materialise(k)
		}
		if e == nil {
			return
		}
		e.row = row
		s.rowed = append(s.rowed, e)
		if nonZero(row) {
			e.live = true
			s.live = append(s.live, e)
		}
	}
	for id, row := range a.single {
		set(single(id), row)
	}
	for k, row := range a.pairs {
		set(ckey{k[0], k[1]}, row)
	}
	sort.Slice(s.live, func(i, j int) bool { return s.live[i].seq < s.live[j].seq })
}

// updatePriorities is Gavel's _update_priorities in simulation.
func (s *simulator) updatePriorities() error {
	need := (s.clock.Now()-s.last >= s.cfg.MinResetS || s.last == 0) && s.needUpd
	if need {
		s.resetTimeRunSoFar()
		a, err := s.timedAllocate()
		if err != nil {
			return fmt.Errorf("t=%.1f s: allocation: %w", s.clock.Now(), err)
		}
		if s.cfg.Check {
			if err := s.checkAllocation(a); err != nil {
				return err
			}
		}
		s.setAlloc(a)
		s.allocs++
		s.needUpd = false
	}
	for _, e := range s.live { // the others' priorities are 0
		for t := range s.types {
			e.priority[t] = s.priority(e, t)
		}
	}
	return nil
}

// priority is an entry's priority on type t: its allocation over the
// share of the type's time it received since the reset (allocation × 1e9
// if none), 0 without an allocation on t or with a member that cannot run
// on t. Most entries of a packing policy have no allocation: those are
// settled before the share is computed.
func (s *simulator) priority(e *entry, t int) float64 {
	if e.row == nil || e.row[t] == 0 {
		return 0
	}
	for _, v := range e.tput[t] {
		if v == 0 {
			return 0
		}
	}
	frac := 0.0
	if s.wtime[t] != 0 {
		frac = e.timeSoFar[t] / s.wtime[t]
	}
	if frac > 0 {
		return e.row[t] / frac
	}
	return e.row[t] * neverRunPriorityMult
}

type queueKey struct {
	prio, deficit, allocation float64
	idx                       int // the entry's seq
}

// selectJobs is Gavel's _schedule_jobs_on_workers_helper: per type in
// order, entries by decreasing (priority, deficit, allocation), greedily
// while GPUs of the type remain, no job twice (alone or in a pair).
// Entries come off a heap in that order (ties by position, as Gavel's
// stable sort keeps them) only until the type's GPUs are gone. Only the
// live entries (a non-zero row) go on it at first: the others have
// priority 0 and allocation 0, and come after every entry of positive
// priority. When GPUs are left once those are taken, the other entries
// that could still be taken (every member unscheduled and able to run on
// the type, fitting the GPUs left: an entry skipped now would be skipped
// when popped later, as jobs are only ever scheduled and GPUs taken) join
// the heap; a FIFO policy takes no entry of priority 0, so never those.
// With lazy pairs, those are found from the unscheduled jobs (takeLazy),
// and a pair not yet made is made when taken.
func (s *simulator) selectJobs(order []int) [][]*entry {
	left := append([]int(nil), s.workers...)
	keys := make(queueHeap, 0, len(s.live))
	fifo := strings.HasPrefix(s.policy.Name(), "FIFO")
	done := &s.done
	done.reset()
	sched := make([][]*entry, len(s.types))
	take := func(e *entry, t int, k queueKey) bool {
		a, b := e.key.a, e.key.b
		skip := done.has(a) || e.tput[t][0] <= 0
		if e.key.isPair() {
			skip = skip || done.has(b) || e.tput[t][1] <= 0
		}
		sf := s.jobs[a].job.ScaleFactor
		if skip || (fifo && k.prio <= 0) || sf > left[t] {
			return false
		}
		left[t] -= sf
		done.add(a)
		if e.key.isPair() {
			done.add(b)
		}
		sched[t] = append(sched[t], e)
		return true
	}
	var rest []*entry
	for _, t := range order {
		keys = keys[:0]
		for _, e := range s.live {
			keys = append(keys, queueKey{e.priority[t], e.deficit[t], e.row[t], e.seq})
		}
		keys.init()
		for len(keys) > 0 && left[t] > 0 && keys[0].prio > 0 {
			k := keys.pop()
			take(s.liveBySeq(k.idx), t, k)
		}
		if left[t] == 0 || fifo || done.len() == len(s.active) {
			continue
		}
		if s.lazy {
			keys = s.takeLazy(keys, t, left, done, take)
			continue
		}
		rest = rest[:0]
		for _, e := range s.entries {
			if e.gone || e.live || s.jobs[e.key.a].job.ScaleFactor > left[t] {
				continue
			}
			ok := !done.has(e.key.a) && e.tput[t][0] > 0
			if e.key.isPair() {
				ok = ok && !done.has(e.key.b) && e.tput[t][1] > 0
			}
			if ok {
				keys = append(keys, queueKey{0, e.deficit[t], 0, e.seq})
				rest = append(rest, e)
			}
		}
		keys.init()
		for len(keys) > 0 && left[t] > 0 {
			k := keys.pop()
			e := s.liveBySeq(k.idx)
			if e == nil || e.seq != k.idx {
				e = restBySeq(rest, k.idx)
			}
			take(e, t, k)
		}
	}
	return sched
}

// takeLazy is type t's fallback with lazy pairs: the entries not live
// whose members are all unscheduled (not in done), can run on t and fit
// the GPUs left, made or not, keyed (0, deficit, 0, seq) as the eager
// fallback keys them, taken in key order while GPUs of t are left. The
// made ones (the live entries left in keys, the jobs alone, the pairs
// made) go on a heap (madeRest); the pairs not made come from a stream in
// seq order (pairStream), whose keys are already in key order (deficit
// half before the last reset's arrivals, 0 after), merged with the heap
// as they are needed: a round reads the few pairs it takes and not every
// pair of the queue. A pair not made yet is made (virtualPair) and
// registered only when taken. It returns keys, emptied, for reuse.
func (s *simulator) takeLazy(keys queueHeap, t int, left []int, done *jobSet, take func(*entry, int, queueKey) bool) queueHeap {
	keys, ps := s.madeRest(keys, t, left[t], done)
	keys.init()
	for left[t] > 0 {
		vk, ok := ps.peek(done, left[t])
		if !ok && len(keys) == 0 {
			break
		}
		if ok && (len(keys) == 0 || vk.before(keys[0])) {
			ps.advance()
			if e := s.virtualPair(keyOfSeq(vk.idx)); take(e, t, vk) {
				s.register(e)
			}
			continue
		}
		k := keys.pop()
		e := s.liveBySeq(k.idx)
		if e == nil {
			e = s.entryOf(keyOfSeq(k.idx))
		}
		take(e, t, k)
	}
	return keys[:0]
}

// madeRest adds to keys the fallback's made entries that are not live:
// the unscheduled jobs alone, and their pairs that are made, keyed (0,
// deficit, 0, seq); it returns the stream of their pairs not made.
func (s *simulator) madeRest(keys queueHeap, t, left int, done *jobSet) (queueHeap, *pairStream) {
	ps := &pairStream{s: s, t: t, bySF: map[int][]int{}, pos: map[int]int{}}
	for _, id := range s.active {
		sf := s.jobs[id].job.ScaleFactor
		if done.has(id) || sf > left {
			continue
		}
		if e := s.byJob[id].es[0]; !e.live && e.tput[t][0] > 0 {
			keys = append(keys, queueKey{0, e.deficit[t], 0, e.seq})
		}
		ps.pos[id] = len(ps.bySF[sf])
		ps.bySF[sf] = append(ps.bySF[sf], id)
		ps.ids = append(ps.ids, id)
	}
	for _, b := range ps.ids {
		je := s.byJob[b]
		for i, a := range je.partner {
			if a < 0 || a > b {
				continue
			}
			if _, ok := ps.pos[a]; !ok {
				continue // scheduled, or gone
			}
			if e := je.es[i]; !e.gone && !e.live && e.tput[t][0] > 0 && e.tput[t][1] > 0 {
				keys = append(keys, queueKey{0, e.deficit[t], 0, e.seq})
			}
		}
	}
	return keys, ps
}

// pairStream is the fallback's pairs that are not made, of the jobs
// unscheduled when it began (ids, ascending; by scale factor in bySF, pos
// the place of each in its list), in seq order: by later job b, then
// earlier job a. Its keys are (0, half, 0, seq) for pairs due before the
// last reset and (0, 0, 0, seq) after (virtualPair), so that seq order is
// key order. A pair is offered only while both its jobs are unscheduled
// and it fits the GPUs left, as the selection would skip it otherwise.
type pairStream struct {
	s      *simulator
	t      int
	ids    []int
	bySF   map[int][]int
	pos    map[int]int
	bi, ai int // the next pair: (bySF[sf of ids[bi]][ai], ids[bi])
	p      int // ids[bi]'s made pairs before ai (byJob partner index)
}

// peek is the next pair's key, skipping the pairs that cannot be taken now.
func (ps *pairStream) peek(done *jobSet, left int) (queueKey, bool) {
	s := ps.s
	for ; ps.bi < len(ps.ids); ps.bi, ps.ai, ps.p = ps.bi+1, 0, 0 {
		b := ps.ids[ps.bi]
		jb := s.jobs[b]
		if done.has(b) || jb.job.ScaleFactor > left {
			continue
		}
		je, cls := s.byJob[b], ps.bySF[jb.job.ScaleFactor]
		for ; ps.ai < ps.pos[b]; ps.ai++ {
			a := cls[ps.ai]
			for ps.p < len(je.partner) && je.partner[ps.p] < a {
				ps.p++
			}
			if done.has(a) || (ps.p < len(je.partner) && je.partner[ps.p] == a) {
				continue // taken, or made (on the heap)
			}
			pt := s.pairTputs[[2]int{s.jobs[a].typeID, jb.typeID}]
			if pt[ps.t][0] <= 0 || pt[ps.t][1] <= 0 {
				continue
			}
			k := ckey{a, b}
			d := 0.0
			if seqOf(k) < s.resetSeq {
				d = s.cfg.RoundS / 2
			}
			return queueKey{0, d, 0, seqOf(k)}, true
		}
	}
	return queueKey{}, false
}

// advance moves past the pair peek gave.
func (ps *pairStream) advance() { ps.ai++ }

// jobSet is a set of job ids (ids are arrival numbers, so dense), kept
// between rounds: reset clears only what was added.
type jobSet struct {
	in  []bool
	ids []int
}

func (d *jobSet) has(id int) bool { return id < len(d.in) && d.in[id] }

func (d *jobSet) add(id int) {
	if id >= len(d.in) {
		d.in = append(d.in, make([]bool, id+1-len(d.in)+len(d.in)/2)...)
	}
	if !d.in[id] {
		d.in[id] = true
		d.ids = append(d.ids, id)
	}
}

func (d *jobSet) len() int { return len(d.ids) }

func (d *jobSet) reset() {
	for _, id := range d.ids {
		d.in[id] = false
	}
	d.ids = d.ids[:0]
}

// liveBySeq finds the live entry of a seq (s.live is in seq order); nil if none.
func (s *simulator) liveBySeq(seq int) *entry {
	i := sort.Search(len(s.live), func(i int) bool { return s.live[i].seq >= seq })
	if i < len(s.live) && s.live[i].seq == seq {
		return s.live[i]
	}
	return nil
}

// restBySeq finds an entry of a seq in es (in seq order).
func restBySeq(es []*entry, seq int) *entry {
	i := sort.Search(len(es), func(i int) bool { return es[i].seq >= seq })
	return es[i]
}

// queueHeap is a binary heap of queue keys, the first in selection order
// at the top.
type queueHeap []queueKey

// before is the selection order: priority, deficit, allocation, all
// decreasing, then position.
func (a queueKey) before(b queueKey) bool {
	switch {
	case a.prio != b.prio:
		return a.prio > b.prio
	case a.deficit != b.deficit:
		return a.deficit > b.deficit
	case a.allocation != b.allocation:
		return a.allocation > b.allocation
	}
	return a.idx < b.idx
}

func (h queueHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *queueHeap) pop() queueKey {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return top
}

func (h queueHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
