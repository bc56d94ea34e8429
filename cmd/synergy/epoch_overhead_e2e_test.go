package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/sensitivity"
)

// passesScript trains 4 passes of 20 iterations of about 50 ms, 16
// samples each, and sleeps 2 s between passes (validation, a checkpoint),
// reporting its epoch as the contract's helper does (\173 and \175 are
// the braces: a command's arguments take {placeholders}).
const passesScript = `i=0
for e in 0 1 2 3; do
	[ $e -gt 0 ] && sleep 2
	for k in $(seq 20); do
		sleep 0.05
		printf '\173"iter":%d,"samples":16,"data_wait_s":0.001,"step_s":0.05,"ts":%s,"epoch":%d\175\n' $i $(date +%s.%N) $e >> "$SYNERGY_METRICS_FILE"
		i=$((i+1))
	done
done`

// profileOneCPUPoint profiles a shell script at one core, memory
// unlimited, with extra flags, and returns the profile's path, its cell
// (which must hold a figure) and synergy's output.
func profileOneCPUPoint(t *testing.T, name, script string, extra ...string) (string, *sensitivity.Cell, string) {
	t.Helper()
	needCgroups(t)
	out := filepath.Join(t.TempDir(), name+".json")
	args := append([]string{"profile", "--strategy", "synergy", "--cpus", "1", "--data", smallDataset(t, 8), "--stall-breakdown=false",
		"--job-name", fmt.Sprintf("e2e%s%d", name, os.Getpid()), "--out", out}, extra...)
	log, code := runCLIOutput(t, append(args, "--", "/bin/sh", "-c", script, "sh")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, log)
	}
	p, err := sensitivity.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 0)
	if c == nil || c.Failure != nil || c.Stats == nil || c.SamplesPerS <= 0 {
		t.Fatalf("cell = %+v, want a figure\n%s", c, log)
	}
	return out, c, log
}

// The time a script spends between passes is not throughput: the cell's
// samples/s is the rate within passes (computed here from the job's own
// stream), and the overhead is recorded beside it.
func TestProfileE2E_TimeBetweenPassesRecordedApart(t *testing.T) {
	out, c, _ := profileOneCPUPoint(t, "passes", passesScript, "--target-ci", "0.01", "--max-iterations", "80", "--warmup", "3")

	// The in-pass rate from the job's own stream: each pass's samples after
	// its first iteration over the time from its first to its last.
	f, err := os.Open(filepath.Join(strings.TrimSuffix(out, ".json")+".timeline", "cpus1-memunlimited.metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, last, samples := map[int]float64{}, map[int]float64{}, map[int]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it jobcontract.Iteration
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil || it.Epoch == nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		e := *it.Epoch
		if _, ok := first[e]; !ok {
			first[e] = it.TS
		} else {
			samples[e] += float64(it.Samples)
		}
		last[e] = it.TS
	}
	var s, d float64
	for e := range first {
		s, d = s+samples[e], d+last[e]-first[e]
	}
	inPass := s / d
	if rel := math.Abs(c.SamplesPerS-inPass) / inPass; rel > 0.02 {
		t.Errorf("cell %.1f samples/s, in-pass rate %.1f: %.1f%% apart, want within 2%%", c.SamplesPerS, inPass, 100*rel)
	}
	if st := c.Stats; st.PassBoundaries < 2 || math.Abs(st.EpochOverheadS-2) > 0.5 {
		t.Errorf("%d pass boundaries with %.2f s overhead each; want at least 2 measured, about 2 s each", st.PassBoundaries, st.EpochOverheadS)
	}
	t.Logf("cell %.1f samples/s (in-pass %.1f; wall rate over the stream would be lower), %d boundaries, %.2f s each",
		c.SamplesPerS, inPass, c.Stats.PassBoundaries, c.Stats.EpochOverheadS)
}

// A job whose point ends after fewer measured iterations than the minimum
// (a slow step hitting its time cap; here, a script that stops early) is
// stored and shown as unconverged, with a warning, never as a plain
// figure.
func TestProfileE2E_BelowMinIterationsIsUnconverged(t *testing.T) {
	short := `for i in $(seq 0 11); do sleep 0.05; printf '\173"iter":%d,"samples":4,"data_wait_s":0.01,"step_s":0.04,"ts":%s\175\n' $i $(date +%s.%N) >> "$SYNERGY_METRICS_FILE"; done`
	_, c, log := profileOneCPUPoint(t, "short", short, "--min-iterations", "30", "--warmup", "2")
	if !strings.Contains(c.Stats.Unconverged, "below the minimum of 30") {
		t.Errorf("unconverged = %q, want it to say the cell is below the minimum of 30 iterations", c.Stats.Unconverged)
	}
	if !strings.Contains(log, "unconverged") || !strings.Contains(log, "--min-iterations") {
		t.Errorf("the table and warnings do not say the cell is unconverged:\n%s", log)
	}
}
