package gavel

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Job is one line of Gavel's trace format (its Job.__str__ plus the
// arrival time), or one generated job.
type Job struct {
	JobType        string  // model with batch size, e.g. "ResNet-18 (batch size 64)"
	Command        string  // what a physical cluster would run
	WorkingDir     string  // relative to the run directory
	NumStepsArg    string  // the command's flag for the number of steps
	NeedsDataDir   bool    // the command takes a data directory
	TotalSteps     float64 // steps to run (an integer in trace files)
	ScaleFactor    int     // GPUs
	PriorityWeight float64 // 1, or 5 for high-priority jobs
	SLO            float64 // deadline as a multiple of DurationS; ≤ 0: none
	ArrivalS       float64 // seconds from the start of the trace
	DurationS      float64 // generated jobs: exclusive time on the reference type; 0 when unknown
}

// Key is the job's throughputs key.
func (j *Job) Key() JobType { return JobType{Model: j.JobType, ScaleFactor: j.ScaleFactor} }

// LoadTrace reads a Gavel trace file.
func LoadTrace(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	jobs, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// ReadTrace reads Gavel's trace format: one job per line, 10 tab-separated
// fields (job_type, command, working_directory, num_steps_arg,
// needs_data_dir 0/1, total_steps, scale_factor, priority_weight, SLO (-1:
// none), arrival_time_s). Every field is checked, arrival times must not
// decrease (Gavel asserts it), and an error names the line and the field.
// Empty lines are skipped.
func ReadTrace(r io.Reader) ([]Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var jobs []Job
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		j, err := parseTraceLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(jobs) >= MaxJobs {
			return nil, fmt.Errorf("line %d: more than %d jobs (gavel.MaxJobs, the most one run takes)", n, MaxJobs)
		}
		if len(jobs) > 0 && j.ArrivalS < jobs[len(jobs)-1].ArrivalS {
			return nil, fmt.Errorf("line %d: arrival_time %v is before the previous line's %v: a trace must be in arrival order", n, j.ArrivalS, jobs[len(jobs)-1].ArrivalS)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("no jobs")
	}
	return jobs, nil
}

func parseTraceLine(line string) (Job, error) {
	f := strings.Split(line, "\t")
	if len(f) != 10 {
		return Job{}, fmt.Errorf("%d tab-separated fields, want 10 (job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time)", len(f))
	}
	j := Job{JobType: f[0], Command: f[1], WorkingDir: f[2], NumStepsArg: f[3]}
	if j.JobType == "" {
		return j, fmt.Errorf("job_type: empty")
	}
	switch strings.TrimSpace(f[4]) {
	case "0":
	case "1":
		j.NeedsDataDir = true
	default:
		return j, fmt.Errorf("needs_data_dir %q: want 0 or 1", f[4])
	}
	steps, err := strconv.ParseInt(strings.TrimSpace(f[5]), 10, 64)
	if err != nil || steps < 1 || steps > MaxSteps {
		return j, fmt.Errorf("total_steps %q: want an integer from 1 to 2^53", f[5])
	}
	j.TotalSteps = float64(steps)
	sf, err := strconv.Atoi(strings.TrimSpace(f[6]))
	if err != nil || sf < 1 || sf > MaxGPUs {
		return j, fmt.Errorf("scale_factor %q: want an integer from 1 to %d", f[6], MaxGPUs)
	}
	j.ScaleFactor = sf
	if j.PriorityWeight, err = finite(f[7]); err != nil || j.PriorityWeight <= 0 {
		return j, fmt.Errorf("priority_weight %q: want a number > 0", f[7])
	}
	if j.SLO, err = finite(f[8]); err != nil {
		return j, fmt.Errorf("SLO %q: want a number (-1: none)", f[8])
	}
	if j.SLO < 0 {
		j.SLO = -1
	}
	if j.ArrivalS, err = finite(f[9]); err != nil || j.ArrivalS < 0 || j.ArrivalS > MaxArrivalS {
		return j, fmt.Errorf("arrival_time %q: want seconds from 0 to %g", f[9], MaxArrivalS)
	}
	return j, nil
}

func finite(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not finite")
	}
	return v, nil
}

// WriteTrace writes jobs in Gavel's trace format, as Gavel's
// Job.__str__ + "\t%f" writes them (total steps, scale factor and
// priority as integers, SLO and arrival with six decimals).
func WriteTrace(w io.Writer, jobs []Job) error {
	bw := bufio.NewWriter(w)
	for _, j := range jobs {
		needs := 0
		if j.NeedsDataDir {
			needs = 1
		}
		slo := j.SLO
		if slo <= 0 {
			slo = -1
		}
		if _, err := fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%f\t%f\n", j.JobType, j.Command, j.WorkingDir,
			j.NumStepsArg, needs, int64(j.TotalSteps), j.ScaleFactor, int64(j.PriorityWeight), slo, j.ArrivalS); err != nil {
			return err
		}
	}
	return bw.Flush()
}
