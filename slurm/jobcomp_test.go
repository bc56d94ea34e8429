package slurm

import (
	"strings"
	"testing"
	"time"
)

const jobCompLog = `JobId=2 UserId=root(0) GroupId=root(0) Name=my job.sh JobState=PENDING Partition=gpu TimeLimit=UNLIMITED StartTime=2026-11-28T20:31:28 EndTime=2026-11-28T20:31:38 NodeList=node1 NodeCnt=1 ProcCnt=2 WorkDir=/tmp/a b ReservationName= Tres=cpu=2,mem=1G,node=1,billing=2 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-28T20:31:20 EligibleTime=2026-11-28T20:31:20 DerivedExitCode=0:0 ExitCode=0:0 
JobId=3 UserId=root(0) GroupId=root(0) Name=other JobState=CANCELLED Partition=gpu TimeLimit=UNLIMITED StartTime=Unknown EndTime=2026-11-28T20:31:40 NodeList=(null) NodeCnt=0 ProcCnt=0 WorkDir=/tmp ReservationName= Tres= Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-28T20:31:30 EligibleTime=2026-11-28T20:31:30 DerivedExitCode=0:0 ExitCode=0:0 

JobId=2 UserId=root(0) GroupId=root(0) Name=my job.sh JobState=COMPLETED Partition=gpu TimeLimit=525600 StartTime=2026-11-28T20:32:45 EndTime=2026-11-28T20:33:24 NodeList=node2 NodeCnt=1 ProcCnt=2 WorkDir=/tmp/a b ReservationName= Tres=cpu=2,mem=1G,node=1,billing=2 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-28T20:31:38 EligibleTime=2026-11-28T20:33:39 DerivedExitCode=0:0 ExitCode=0:0 
`

func TestJobComp_JoinsAJobsRuns(t *testing.T) {
	runs, err := ParseJobComp(strings.NewReader(jobCompLog), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Name != "my job.sh" || !runs[0].Requeued() || runs[2].NodeList != "node2" || !runs[1].Start.IsZero() {
		t.Fatalf("runs %+v", runs)
	}
	recs := JoinRuns(runs)
	if len(recs) != 2 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	if r.JobID != 2 || r.Runs != 2 || r.Preemptions != 1 || r.State != "COMPLETED" {
		t.Errorf("job 2: %+v", r)
	}
	// Arrival is the first submission (a requeue resets SubmitTime), the
	// JCT runs to the last end, and the preemption cost 20:31:38 -> 20:32:45.
	if r.JCTS != 124 || r.PreemptedS != 67 || r.FirstStart.Format(time.TimeOnly) != "20:31:28" {
		t.Errorf("job 2: jct %v preempted %v first start %v; want 124, 67, 20:31:28", r.JCTS, r.PreemptedS, r.FirstStart)
	}
	if recs[1].JCTS != 0 || !recs[1].Finish.IsZero() {
		t.Errorf("a cancelled job has no JCT: %+v", recs[1])
	}
	first := jobCompLog[:strings.Index(jobCompLog, "\n")]
	// A job named to forge its own record: "x JobState=COMPLETED ..." would
	// set the state and times its real fields then repeat.
	forged := strings.Replace(first, "Name=my job.sh", "Name=x JobState=COMPLETED Partition=gpu TimeLimit=1 StartTime=2026-11-28T20:31:21 EndTime=2026-11-28T20:31:22 NodeList=node1", 1)
	for _, bad := range []string{"JobId=x UserId=", "garbage", strings.Replace(first, "2026-11-28T20:31:28", "yesterday", 1), forged} {
		if _, err := ParseJobComp(strings.NewReader("\n"+bad+"\n"), time.UTC); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%.40q: %v, want an error naming line 2", bad, err)
		}
	}
}
