package sim

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParsePhilly_SyntheticLog(t *testing.T) {
	data, err := os.ReadFile("testdata/philly_cluster_job_log.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		opt   PhillyOptions
		jobs  []PhillyJob
		skips PhillySkips
	}{
		{
			name: "single-GPU",
			jobs: []PhillyJob{
				// submitted 1 h after the first (job 2 at 09:00), 2 h attempt
				{JobID: "application_1_0001", SubmittedS: 3600, DurationS: 7200, GPUs: 1},
				// two 1 h attempts summed; GPUs become 1
				{JobID: "application_1_0002", SubmittedS: 0, DurationS: 7200, GPUs: 1},
				{JobID: "application_1_0007", SubmittedS: 7200, DurationS: 3600, GPUs: 1},
				{JobID: "application_1_0008", SubmittedS: 9000, DurationS: 7200, GPUs: 1},
			},
			skips: PhillySkips{SkipNoTimes: 1, SkipNoAttempts: 1, SkipNoSubmitted: 1, SkipDuration: 1, SkipNoWork: 1},
		},
		{
			name: "multi-GPU",
			opt:  PhillyOptions{MultiGPU: true},
			jobs: []PhillyJob{
				{JobID: "application_1_0001", SubmittedS: 3600, DurationS: 7200, GPUs: 1},
				// GPUs of the last attempt: 4
				{JobID: "application_1_0002", SubmittedS: 0, DurationS: 7200, GPUs: 4},
				// 3 GPUs is not 1/2/4/8/16: 1
				{JobID: "application_1_0007", SubmittedS: 7200, DurationS: 3600, GPUs: 1},
			},
			// 32 GPUs: too wide
			skips: PhillySkips{SkipNoTimes: 1, SkipNoAttempts: 1, SkipNoSubmitted: 1, SkipDuration: 1, SkipNoWork: 1, SkipTooWide: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jobs, skips, err := ParsePhilly(bytes.NewReader(data), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(jobs, c.jobs) {
				t.Errorf("jobs\n got %+v\nwant %+v", jobs, c.jobs)
			}
			if !reflect.DeepEqual(skips, c.skips) {
				t.Errorf("skips %v, want %v", skips, c.skips)
			}
		})
	}
}

func TestParsePhilly_Errors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"not a list", `{"jobid": "x"}`, "not a JSON list"},
		{"bad time", `[{"jobid": "a", "submitted_time": "2017-10-03 10:00:00", "attempts": [{"start_time": "2017-10-03 10:00:00", "end_time": "2017-10-03 25:00:00", "detail": []}]}]`, `job 0 (a): attempts[0].end_time: "2017-10-03 25:00:00" is not YYYY-MM-DD HH:MM:SS`},
		{"bad submitted", `[{"jobid": "a", "submitted_time": "yesterday", "attempts": [{}]}]`, "job 0 (a): submitted_time"},
		{"wrong type", `[{"jobid": "a", "attempts": []}, {"jobid": "b", "attempts": [{"detail": [{"gpus": 3}]}]}]`, "job 1: field attempts.detail.gpus"},
		{"truncated", `[{"jobid": "a", "attempts": []}, {"jobid": `, "job 1"},
		{"nothing usable", `[{"jobid": "a", "attempts": []}]`, "no usable jobs (skipped no attempts: 1)"},
		{"empty", ``, "philly: EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParsePhilly(strings.NewReader(c.in), PhillyOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestPhillySource_MapsLikeSynergy(t *testing.T) {
	jobs, _, err := LoadPhilly("testdata/philly_cluster_job_log.json", PhillyOptions{MultiGPU: true})
	if err != nil {
		t.Fatal(err)
	}
	// Trace arrivals: sorted by submission, iterations = duration / the
	// model's iteration time, classes by the split.
	src, err := NewPhillySource(jobs, PhillyConfig{Split: [3]float64{20, 70, 10}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		j, ok := src.Next()
		if !ok {
			break
		}
		got = append(got, j.Model)
		switch j.ID {
		case 0: // application_1_0002 (09:00): first class image → alexnet, 0.6 s/iter
			if j.ArrivalSeconds != 0 || j.GPUs != 4 || j.Iterations != int64(7200/0.6) {
				t.Errorf("job 0: %+v", j)
			}
		case 1: // application_1_0001 (10:00); language is now furthest below 70%: gnmt, 0.12 s/iter
			if j.ArrivalSeconds != 3600 || j.GPUs != 1 || j.Iterations != 60000 {
				t.Errorf("job 1: %+v", j)
			}
		}
		if j.Matrix == nil {
			t.Errorf("job %d has no matrix", j.ID)
		}
	}
	if strings.Join(got, ",") != "alexnet,gnmt,transformer" {
		t.Errorf("models %v", got)
	}
	// Poisson arrivals cycle through the list.
	src, _ = NewPhillySource(jobs, PhillyConfig{JobsPerHour: 6, NumJobs: 7, Split: [3]float64{20, 70, 10}, Seed: 3})
	last, n := -1.0, 0
	for {
		j, ok := src.Next()
		if !ok {
			break
		}
		if j.ArrivalSeconds < last || j.GPUs != jobs[n%3].GPUs {
			t.Errorf("job %d: arrival %v after %v, GPUs %d", j.ID, j.ArrivalSeconds, last, j.GPUs)
		}
		last = j.ArrivalSeconds
		n++
	}
	if n != 7 {
		t.Errorf("%d jobs, want 7", n)
	}
	if _, err := NewPhillySource(jobs, PhillyConfig{JobsPerHour: -1, Split: [3]float64{20, 70, 10}}); err == nil || !strings.Contains(err.Error(), "jobs_per_hour") {
		t.Errorf("negative rate: %v", err)
	}
}

func FuzzParsePhilly(f *testing.F) {
	if data, err := os.ReadFile("testdata/philly_cluster_job_log.json"); err == nil {
		f.Add(data, true)
	}
	f.Add([]byte(`[{"jobid":"a","submitted_time":"2017-10-03 10:00:00","attempts":[{"start_time":"2017-10-03 10:00:00","end_time":"2017-10-03 11:00:00","detail":[{"gpus":["g"]}]}]}]`), false)
	f.Add([]byte(`[]`), false)
	f.Fuzz(func(t *testing.T, data []byte, multi bool) {
		jobs, _, err := ParsePhilly(bytes.NewReader(data), PhillyOptions{MultiGPU: multi})
		if err != nil {
			return
		}
		for i, j := range jobs {
			if j.GPUs < 1 || (!multi && j.GPUs != 1) || j.GPUs > 16 {
				t.Fatalf("job %d: %d GPUs", i, j.GPUs)
			}
			if !(j.DurationS > phillyMinDurationS && j.DurationS < phillyMaxDurationS) {
				t.Fatalf("job %d: duration %v outside the filter", i, j.DurationS)
			}
			if j.SubmittedS < 0 {
				t.Fatalf("job %d: submitted %v before the first", i, j.SubmittedS)
			}
		}
	})
}
