package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

// PhillyJob is one job of a Philly cluster_job_log as Synergy uses it: only
// when it was submitted, how long its attempts ran and how many GPUs it had.
type PhillyJob struct {
	JobID string `json:"jobid"`
	// SubmittedS is seconds after the earliest submission in the file.
	SubmittedS float64 `json:"submitted_s"`
	// DurationS is the summed duration of the job's usable attempts.
	DurationS float64 `json:"duration_s"`
	// GPUs counts the GPUs of the job's last usable attempt (Synergy
	// assumes all attempts have the same).
	GPUs int `json:"gpus"`
}

// PhillyOptions are the choices Synergy's parse_philly_trace_full makes.
type PhillyOptions struct {
	// MultiGPU keeps GPU counts (jobs over 16 GPUs are skipped, counts
	// other than 1/2/4/8/16 become 1, as in the original's exponential
	// mode); otherwise every job has one GPU.
	MultiGPU bool
}

// Philly duration filter (the Gavel-like range Synergy keeps): strictly
// between 10^1.5 and 10^4 minutes (31.6 minutes to 6.9 days).
var (
	phillyMinDurationS = math.Pow(10, 1.5) * 60
	phillyMaxDurationS = math.Pow(10, 4) * 60
)

// Reasons a Philly job is skipped.
const (
	SkipNoAttempts  = "no attempts"
	SkipNoSubmitted = "no submitted_time"
	SkipNoTimes     = "no attempt with start and end times"
	SkipNoWork      = "no attempt with a positive duration and GPUs"
	SkipTooWide     = "more than 16 GPUs"
	SkipDuration    = "duration outside 31.6 min to 6.9 days"
)

// PhillySkips counts skipped jobs by reason.
type PhillySkips map[string]int

// String lists the counts, reasons sorted.
func (s PhillySkips) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, s[k]))
	}
	return strings.Join(parts, ", ")
}

// Total is the number of skipped jobs.
func (s PhillySkips) Total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

type phillyRecord struct {
	Status        string          `json:"status"`
	VC            string          `json:"vc"`
	JobID         string          `json:"jobid"`
	User          string          `json:"user"`
	SubmittedTime *string         `json:"submitted_time"`
	Attempts      []phillyAttempt `json:"attempts"`
}

type phillyAttempt struct {
	StartTime *string        `json:"start_time"`
	EndTime   *string        `json:"end_time"`
	Detail    []phillyDetail `json:"detail"`
}

type phillyDetail struct {
	IP   string   `json:"ip"`
	GPUs []string `json:"gpus"`
}

const phillyTimeLayout = "2006-01-02 15:04:05"

// phillyTime parses a Philly time; ok is false for null or "None" (the
// trace's missing values); a malformed time is an error.
func phillyTime(s *string) (t time.Time, ok bool, err error) {
	if s == nil || *s == "" || strings.Contains(*s, "None") {
		return time.Time{}, false, nil
	}
	t, err = time.Parse(phillyTimeLayout, *s)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q is not YYYY-MM-DD HH:MM:SS", *s)
	}
	return t, true, nil
}

// ParsePhilly reads a Philly cluster_job_log (a JSON list of jobs) with a
// streaming decoder, one job at a time, and returns the jobs Synergy would
// use, in file order, with the skipped ones counted by reason. Errors name
// the job's index in the list and the field.
func ParsePhilly(r io.Reader, opt PhillyOptions) ([]PhillyJob, PhillySkips, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("philly: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, nil, fmt.Errorf("philly: the file is not a JSON list of jobs (starts with %v)", tok)
	}
	skips := PhillySkips{}
	var jobs []PhillyJob
	var submitted []time.Time
	for i := 0; dec.More(); i++ {
		var rec phillyRecord
		if err := dec.Decode(&rec); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) {
				return nil, nil, fmt.Errorf("philly: job %d: field %s: %s is not a %s", i, typ.Field, typ.Value, typ.Type)
			}
			return nil, nil, fmt.Errorf("philly: job %d: %w", i, err)
		}
		job, sub, reason, err := phillyJob(rec, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("philly: job %d (%s): %w", i, rec.JobID, err)
		}
		if reason != "" {
			skips[reason]++
			continue
		}
		jobs = append(jobs, job)
		submitted = append(submitted, sub)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("philly: after job %d: %w", len(jobs)+skips.Total(), err)
	}
	if len(jobs) == 0 {
		return nil, skips, fmt.Errorf("philly: no usable jobs (skipped %s)", skips)
	}
	first := submitted[0]
	for _, t := range submitted {
		if t.Before(first) {
			first = t
		}
	}
	for k := range jobs {
		jobs[k].SubmittedS = submitted[k].Sub(first).Seconds()
	}
	return jobs, skips, nil
}

// phillyJob applies Synergy's rules to one record: attempts without both
// times, with a non-positive duration or no GPUs are left out; durations
// are summed; the job is kept if its total lies in the Gavel-like range.
func phillyJob(rec phillyRecord, opt PhillyOptions) (PhillyJob, time.Time, string, error) {
	if len(rec.Attempts) == 0 {
		return PhillyJob{}, time.Time{}, SkipNoAttempts, nil
	}
	sub, ok, err := phillyTime(rec.SubmittedTime)
	if err != nil {
		return PhillyJob{}, time.Time{}, "", fmt.Errorf("submitted_time: %w", err)
	}
	if !ok {
		return PhillyJob{}, time.Time{}, SkipNoSubmitted, nil
	}
	job := PhillyJob{JobID: rec.JobID}
	timed, wide := false, false
	for k, a := range rec.Attempts {
		start, ok1, err := phillyTime(a.StartTime)
		if err != nil {
			return PhillyJob{}, time.Time{}, "", fmt.Errorf("attempts[%d].start_time: %w", k, err)
		}
		end, ok2, err := phillyTime(a.EndTime)
		if err != nil {
			return PhillyJob{}, time.Time{}, "", fmt.Errorf("attempts[%d].end_time: %w", k, err)
		}
		if !ok1 || !ok2 {
			continue
		}
		timed = true
		gpus := 0
		for _, d := range a.Detail {
			gpus += len(d.GPUs)
		}
		if opt.MultiGPU {
			if gpus > 16 {
				wide = true
				continue
			}
			switch gpus {
			case 0, 1, 2, 4, 8, 16:
			default:
				gpus = 1
			}
		} else if gpus > 0 {
			gpus = 1
		}
		dur := end.Sub(start).Seconds()
		if dur <= 0 || gpus <= 0 {
			continue
		}
		job.DurationS += dur
		job.GPUs = gpus
	}
	switch {
	case !timed:
		return PhillyJob{}, time.Time{}, SkipNoTimes, nil
	case job.GPUs == 0 && wide:
		return PhillyJob{}, time.Time{}, SkipTooWide, nil
	case job.GPUs == 0:
		return PhillyJob{}, time.Time{}, SkipNoWork, nil
	case job.DurationS <= phillyMinDurationS || job.DurationS >= phillyMaxDurationS:
		return PhillyJob{}, time.Time{}, SkipDuration, nil
	}
	return job, sub, "", nil
}

// LoadPhilly reads a cluster_job_log file.
func LoadPhilly(path string, opt PhillyOptions) ([]PhillyJob, PhillySkips, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read philly trace: %w", err)
	}
	defer f.Close()
	jobs, skips, err := ParsePhilly(f, opt)
	if err != nil {
		return nil, skips, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, skips, nil
}

// PhillyConfig turns a Philly job list into a workload.
type PhillyConfig struct {
	// JobsPerHour > 0 re-draws arrivals as Poisson at this rate and cycles
	// through the list (Synergy's default exponential mode, job i taking
	// list entry i mod len); 0 keeps the trace's submission times and ends
	// with the list.
	JobsPerHour float64
	// NumJobs stops after this many jobs; 0 means no limit.
	NumJobs int
	// Split is the percentage of image, language and speech jobs.
	Split [3]float64
	Seed  uint64
	// GavelDurations re-draws every job's duration as the generator does
	// (Synergy's default "exponential" mode: the list then gives only its
	// length and, multi-GPU, its GPU counts); otherwise durations are the
	// log's (Synergy's --no_exp).
	GavelDurations bool
}

// PhillySource yields the Philly jobs as simulator jobs, the way Synergy's
// Workload does for a cluster_job_log: the list gives GPU counts and
// durations; each job gets a zoo model by the class split (the class
// furthest below its share so far, models round-robin within a class) and
// iterations = ⌊duration / the model's fair-share iteration time⌋.
type PhillySource struct {
	jobs   []PhillyJob
	cfg    PhillyConfig
	rng    *rand.Rand
	id     int
	last   float64
	models modelAssigner
	zoo    zooJobs
}

// NewPhillySource checks cfg and starts the workload.
func NewPhillySource(jobs []PhillyJob, cfg PhillyConfig) (*PhillySource, error) {
	if len(jobs) == 0 {
		return nil, errors.New("philly workload: no jobs")
	}
	if cfg.JobsPerHour < 0 || math.IsNaN(cfg.JobsPerHour) || math.IsInf(cfg.JobsPerHour, 0) {
		return nil, fmt.Errorf("philly workload: jobs_per_hour = %v: need 0 (trace arrivals) or a positive rate", cfg.JobsPerHour)
	}
	g := GeneratorConfig{JobsPerHour: 1, NumJobs: cfg.NumJobs, Split: cfg.Split}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("philly workload: %w", err)
	}
	if cfg.JobsPerHour == 0 {
		// Trace arrivals: the simulator takes jobs in arrival order.
		jobs = append([]PhillyJob(nil), jobs...)
		sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].SubmittedS < jobs[b].SubmittedS })
	}
	s := &PhillySource{jobs: jobs, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x9411177)),
		models: newModelAssigner(), zoo: zooJobs{}}
	return s, nil
}

// Describe implements Source.
func (s *PhillySource) Describe() string {
	arr := "trace arrivals"
	if s.cfg.JobsPerHour > 0 {
		arr = fmt.Sprintf("%v jobs/h", s.cfg.JobsPerHour)
	}
	dur := "log durations"
	if s.cfg.GavelDurations {
		dur = "Gavel-like durations"
	}
	return fmt.Sprintf("philly: %d jobs, %s, %s, split %v/%v/%v, seed %d", len(s.jobs), arr, dur, s.cfg.Split[0], s.cfg.Split[1], s.cfg.Split[2], s.cfg.Seed)
}

// Next implements Source.
func (s *PhillySource) Next() (*scheduler.Job, bool) {
	if s.cfg.NumJobs > 0 && s.id >= s.cfg.NumJobs {
		return nil, false
	}
	if s.cfg.JobsPerHour == 0 && s.id >= len(s.jobs) {
		return nil, false
	}
	p := s.jobs[s.id%len(s.jobs)]
	arrival := p.SubmittedS
	if s.cfg.JobsPerHour > 0 {
		hours := -math.Log(1-s.rng.Float64()) / s.cfg.JobsPerHour
		s.last += math.Ceil(hours * 3600)
		arrival = s.last
	}
	if s.cfg.GavelDurations {
		p.DurationS = gavelDurationS(s.rng)
	}
	j := s.zoo.job(s.id, s.models.next(s.cfg.Split), arrival, p.DurationS, p.GPUs)
	if j.Iterations < 1 {
		j.Iterations = 1
	}
	s.id++
	return j, true
}
