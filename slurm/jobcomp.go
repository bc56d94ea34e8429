package slurm

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// JobRun is one run of a job as Slurm's own completion log records it
// (JobCompType=jobcomp/filetxt: one line when a run ends, including a run
// ended by a requeue, whose state is then PENDING or REQUEUED).
type JobRun struct {
	JobID    int
	Name     string
	State    string
	NodeList string
	// Submit is when the run was submitted: the job's submission for its
	// first run, the requeue for a later one.
	Submit, Start, End time.Time
}

// Requeued says whether the run ended by a requeue (a preemption).
func (r JobRun) Requeued() bool {
	return r.State == "PENDING" || r.State == "REQUEUED" || r.State == "PREEMPTED"
}

// jobCompKeys are the filetxt plugin's fields, in its order: values may
// hold spaces (a job's name, its working directory), so a line is cut at
// these keys rather than at spaces.
var jobCompKeys = []string{"JobId", "UserId", "GroupId", "Name", "JobState", "Partition", "TimeLimit", "StartTime", "EndTime",
	"NodeList", "NodeCnt", "ProcCnt", "WorkDir", "ReservationName", "Tres", "Account", "QOS", "WcKey", "Cluster",
	"SubmitTime", "EligibleTime", "DerivedExitCode", "ExitCode"}

// maxJobCompLine bounds a line of the log (a name or directory is at most
// a few KiB).
const maxJobCompLine = 64 << 10

// ParseJobComp reads Slurm's jobcomp/filetxt log. Times are the
// controller's local time (loc). A line that is not a record is an error
// naming its number.
func ParseJobComp(r io.Reader, loc *time.Location) ([]JobRun, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxJobCompLine)
	var out []JobRun
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		run, err := parseJobCompLine(line, loc)
		if err != nil {
			return nil, fmt.Errorf("job completion log line %d: %w", n, err)
		}
		out = append(out, run)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("job completion log: %w", err)
	}
	return out, nil
}

func parseJobCompLine(line string, loc *time.Location) (JobRun, error) {
	fields := map[string]string{}
	rest := " " + line
	// A field's value runs to the next key, and a job's owner chooses its
	// name and directory: a name holding " JobState=COMPLETED" would
	// rewrite its own state and times. Such a line cannot be read safely.
	for _, key := range jobCompKeys {
		if strings.Count(rest, " "+key+"=") > 1 {
			return JobRun{}, fmt.Errorf("%s= appears twice (a job's name or directory holds it): the line cannot be read safely", key)
		}
	}
	for k, key := range jobCompKeys {
		i := strings.Index(rest, " "+key+"=")
		if i < 0 {
			return JobRun{}, fmt.Errorf("no %s= field", key)
		}
		rest = rest[i+len(key)+2:]
		end := len(rest)
		if k+1 < len(jobCompKeys) {
			if j := strings.Index(rest, " "+jobCompKeys[k+1]+"="); j >= 0 {
				end = j
			}
		}
		fields[key] = strings.TrimSpace(rest[:end])
		rest = rest[end:]
	}
	id, err := strconv.Atoi(fields["JobId"])
	if err != nil || id <= 0 {
		return JobRun{}, fmt.Errorf("JobId=%q is not a job id", fields["JobId"])
	}
	run := JobRun{JobID: id, Name: fields["Name"], State: fields["JobState"], NodeList: fields["NodeList"]}
	for _, t := range []struct {
		key string
		at  *time.Time
	}{{"SubmitTime", &run.Submit}, {"StartTime", &run.Start}, {"EndTime", &run.End}} {
		v := fields[t.key]
		if v == "Unknown" || v == "None" || v == "" {
			continue
		}
		if *t.at, err = time.ParseInLocation("2006-01-02T15:04:05", v, loc); err != nil {
			return JobRun{}, fmt.Errorf("%s=%q: %w", t.key, v, err)
		}
	}
	return run, nil
}

// JobRecord is one job's runs joined: what a trace run measures, from
// Slurm's records only.
type JobRecord struct {
	JobID int    `json:"id"`
	Name  string `json:"name"`
	// State is the last run's.
	State string `json:"state"`
	// Arrival is the first run's submission; FirstStart its start;
	// Finish the last run's end (zero until it completed).
	Arrival    time.Time `json:"arrival"`
	FirstStart time.Time `json:"first_start"`
	Finish     time.Time `json:"finish"`
	Runs       int       `json:"runs"`
	// Preemptions counts the runs ended by a requeue; PreemptedS is the
	// time between each such end and the next run's start (the cost of
	// the preemptions in waiting, not the work they redo).
	Preemptions int     `json:"preemptions"`
	PreemptedS  float64 `json:"preempted_s"`
	// JCTS is Finish − Arrival in seconds (0 until it completed).
	JCTS float64 `json:"jct_s"`
}

// JoinRuns groups runs by job, in the order of their starts.
func JoinRuns(runs []JobRun) []JobRecord {
	by := map[int][]JobRun{}
	for _, r := range runs {
		by[r.JobID] = append(by[r.JobID], r)
	}
	var out []JobRecord
	for id, rs := range by {
		slices.SortStableFunc(rs, func(a, b JobRun) int { return a.End.Compare(b.End) })
		last := rs[len(rs)-1]
		rec := JobRecord{JobID: id, Name: last.Name, State: last.State, Arrival: rs[0].Submit, FirstStart: rs[0].Start, Runs: len(rs)}
		for k, r := range rs {
			if !r.Requeued() {
				continue
			}
			rec.Preemptions++
			if k+1 < len(rs) && !rs[k+1].Start.IsZero() {
				rec.PreemptedS += max(0, rs[k+1].Start.Sub(r.End).Seconds())
			}
		}
		if last.State == "COMPLETED" {
			rec.Finish = last.End
			rec.JCTS = last.End.Sub(rec.Arrival).Seconds()
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b JobRecord) int { return cmp.Compare(a.JobID, b.JobID) })
	return out
}
