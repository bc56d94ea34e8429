package pytorch_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/jobcontract"
)

// python3 returns the interpreter the tests run: $SYNERGY_PYTHON when set,
// else Debian's /usr/bin/python3 (the python3 first on PATH may be a pyenv
// interpreter that does not see Debian's python3-torch), skipping the test
// (failing under SYNERGY_REQUIRE=python3) when there is none.
func python3(t *testing.T) string {
	t.Helper()
	p := os.Getenv("SYNERGY_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	p, err := exec.LookPath(p)
	if err != nil {
		testreq.Skip(t, "python3", fmt.Sprintf("%v (set SYNERGY_PYTHON to an interpreter)", err))
	}
	return p
}

// pyCmd runs python3 in this directory without leaving __pycache__ behind.
func pyCmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(python3(t), args...)
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX="+t.TempDir()), env...)
	return cmd
}

// hasTorch reports whether the interpreter imports what the reference jobs
// and the probe's real tests need, and why not.
func hasTorch(t *testing.T) (bool, string) {
	out, err := pyCmd(t, nil, "-c", "import torch, torchvision, torchaudio, PIL, numpy").CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("%s cannot import torch, torchvision, torchaudio, PIL and numpy (scripts/install-torch.sh installs them): %s",
			python3(t), strings.TrimSpace(string(out)))
	}
	return true, ""
}

// TestPython_UnitTests runs every test_*.py here (the helper's, the
// probe's, the generators' and the reference jobs') and fails on any
// failure, or if too few ran. Python skips the tests that need torch where
// it is missing; this test then skips too, which SYNERGY_REQUIRE=torch
// turns into a failure.
func TestPython_UnitTests(t *testing.T) {
	out, err := pyCmd(t, nil, "-m", "unittest", "-v").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no test summary in the output:\n%s", out)
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 50 {
		t.Fatalf("only %d Python tests ran:\n%s", n, out)
	}
	t.Logf("%s", m[0])
	if s := regexp.MustCompile(`(?m)^OK \(skipped=(\d+)\)`).FindSubmatch(out); s != nil {
		skips := regexp.MustCompile(`(?m)^.* skipped '.*'$`).FindAll(out, -1)
		why := fmt.Sprintf("%s Python tests skipped:\n%s", s[1], bytes.Join(skips, []byte("\n")))
		if ok, reason := hasTorch(t); !ok {
			why += "\n" + reason
		}
		testreq.Skip(t, "torch", why)
	}
}

// TestProbe_StreamParses runs an unmodified two-loader script with the
// probe injected as synergy profile injects it and reads the stream with the
// profiler's own parser and tailer: every line parses, one per batch of the
// training loader, and the report says the probe wrote them.
func TestProbe_StreamParses(t *testing.T) {
	if ok, why := hasTorch(t); !ok {
		testreq.Skip(t, "torch", why)
	}
	dir := t.TempDir()
	metrics, report := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "r.json")
	probeDir, err := filepath.Abs("probe")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pyCmd(t, []string{"PYTHONPATH=" + probeDir, "SYNERGY_METRICS_FILE=" + metrics, "SYNERGY_PROBE_REPORT=" + report,
		"SYNERGY_PROBE_STEP_S=0.003", "SYNERGY_PROBE_MAX_ITERATIONS=9"},
		"testdata/two_loaders.py", filepath.Join(dir, "seen.json"), "--train", "24", "--batch", "5", "--workers", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("two_loaders.py under the probe: %v\n%s", err, out)
	}
	tl := jobcontract.NewTailer(metrics)
	its, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 9 || tl.Bad != 0 {
		t.Fatalf("%d iterations and %d bad lines (%v), want 9 and 0\n%s", len(its), tl.Bad, tl.Errors, out)
	}
	// 24 samples in batches of 5: 5 5 5 5 4 per pass; the loader-only mode
	// starts the second pass itself.
	wantSamples := []int{5, 5, 5, 5, 4, 5, 5, 5, 5}
	for i, it := range its {
		if it.Iter != i || it.Samples != wantSamples[i] || !it.Emulated || it.StepIntendedS == nil || *it.StepIntendedS != 0.003 {
			t.Errorf("line %d: %+v, want iter %d, %d samples, emulated with step_intended_s 0.003", i, it, i, wantSamples[i])
		}
		if it.StepS < 0.003 {
			t.Errorf("line %d: step_s %v below the 3 ms asked", i, it.StepS)
		}
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"state": "capped"`, `"stream": "probe"`, `"label": "fixed 3.0 ms"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report lacks %s:\n%s", want, data)
		}
	}
}

// TestPython_ScriptsCompile byte-compiles every Python file here, so a
// syntax error fails even where torch is missing and the jobs cannot run.
func TestPython_ScriptsCompile(t *testing.T) {
	files, err := filepath.Glob("*.py")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/*.py")
	probe, _ := filepath.Glob("probe/*.py")
	files = append(append(files, more...), probe...)
	if len(files) < 8 {
		t.Fatalf("only %d Python files found: %v", len(files), files)
	}
	out, err := pyCmd(t, nil, append([]string{"-m", "py_compile"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m py_compile: %v\n%s", err, out)
	}
}

// writeLoop is a training loop using the helper as a script would: two
// epochs over a 5-batch loader whose last batch is short, the first epoch
// ending its steps implicitly, the second through step_done, then a break
// halfway through a third epoch.
const writeLoop = `
import time
from synergy_metrics import SynergyMetrics

class Tensor:
    def __init__(self, n): self.shape = (n, 3, 8, 8)

def loader(sizes):
    for n in sizes:
        time.sleep(0.001)
        yield Tensor(n), Tensor(n)

sizes = [4, 4, 4, 4, 2]
with SynergyMetrics(emulated=True) as m:
    for images, _ in m.wrap(loader(sizes)):
        time.sleep(0.002)
    for images, _ in m.wrap(loader(sizes), epoch=1):
        time.sleep(0.002)
        m.step_done(intended_s=0.002)
    for i, (images, _) in enumerate(m.wrap(loader(sizes))):
        if i == 2:
            break
`

// TestPython_LinesParse checks that what the helper writes is the contract's
// stream: every line parses with jobcontract.ParseIteration, and the
// profiler's Tailer reads them all with no malformed line.
func TestPython_LinesParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	out, err := pyCmd(t, []string{"SYNERGY_METRICS_FILE=" + path}, "-c", writeLoop).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), "\n") {
		t.Fatalf("last line not terminated: %q", data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	// 5 + 5 + 3 iterations (the third epoch is left after its third batch).
	wantSamples := []int{4, 4, 4, 4, 2, 4, 4, 4, 4, 2, 4, 4, 4}
	wantEpoch := []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}
	if len(lines) != len(wantSamples) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantSamples), data)
	}
	prevTS := 0.0
	for i, l := range lines {
		it, err := jobcontract.ParseIteration([]byte(l))
		if err != nil {
			t.Fatalf("line %d %s: %v", i+1, l, err)
		}
		if it.Iter != i || it.Samples != wantSamples[i] {
			t.Errorf("line %d: iter %d samples %d, want iter %d samples %d", i+1, it.Iter, it.Samples, i, wantSamples[i])
		}
		// The third wrap() call without epoch= is the second such call: epoch 1.
		if it.Epoch == nil || *it.Epoch != wantEpoch[i] {
			t.Errorf("line %d: epoch %v, want %d", i+1, it.Epoch, wantEpoch[i])
		}
		if !it.Emulated {
			t.Errorf("line %d: emulated not set", i+1)
		}
		if (it.StepIntendedS != nil) != (i >= 5 && i < 10) {
			t.Errorf("line %d: step_intended_s = %v, want it only where step_done(intended_s=) was called", i+1, it.StepIntendedS)
		}
		// Durations are real sleeps of at least 1 ms (data) and 2 ms (step,
		// where the loop slept); lower bounds only, never upper ones.
		if it.DataWaitS < 0.001 {
			t.Errorf("line %d: data_wait_s %v, below the loader's 1 ms sleep", i+1, it.DataWaitS)
		}
		if i < 10 && it.StepS < 0.002 {
			t.Errorf("line %d: step_s %v, below the loop's 2 ms sleep", i+1, it.StepS)
		}
		if it.TS < prevTS {
			t.Errorf("line %d: ts %v goes back from %v", i+1, it.TS, prevTS)
		}
		prevTS = it.TS
	}

	tl := jobcontract.NewTailer(path)
	its, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != len(lines) || tl.Bad != 0 {
		t.Errorf("profiler's tailer read %d iterations and %d bad lines (%v), want %d and 0", len(its), tl.Bad, tl.Errors, len(lines))
	}
}

// TestProbe_ControlChannel drives a running job as the profiler will: the
// probe's loader-only mode (emulated step) over testdata/control_loop.py,
// commands appended with jobcontract.AppendControl, answers read with the
// profiler's LineReader and ParseAck. Each command's answer names its
// settings and a later iteration than the one before; the loader's worker
// processes (the job's children) follow the workers asked for.
func TestProbe_ControlChannel(t *testing.T) {
	if ok, why := hasTorch(t); !ok {
		testreq.Skip(t, "torch", why)
	}
	dir := t.TempDir()
	probeDir, err := filepath.Abs("probe")
	if err != nil {
		t.Fatal(err)
	}
	cmdPath, ackPath := filepath.Join(dir, "control.jsonl"), filepath.Join(dir, "control-ack.jsonl")
	cmd := pyCmd(t, []string{"PYTHONPATH=" + probeDir, "SYNERGY_METRICS_FILE=" + filepath.Join(dir, "m.jsonl"),
		"SYNERGY_PROBE_STEP_S=0.01", jobcontract.EnvControlFile + "=" + cmdPath, jobcontract.EnvControlAckFile + "=" + ackPath},
		"testdata/control_loop.py", filepath.Join(dir, "out.json"), "--epochs", "1000", "--workers", "2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()
	acks := jobcontract.NewLineReader(ackPath)
	got := map[int]jobcontract.ControlAck{}
	wait := func(seq int) jobcontract.ControlAck {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			lines, err := acks.Next()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				a, err := jobcontract.ParseAck(l)
				if err != nil {
					t.Fatal(err)
				}
				if _, dup := got[a.Seq]; dup {
					// Only a repeated seq is answered again, with an error.
					if a.Error == "" {
						t.Fatalf("seq %d answered twice: %s", a.Seq, l)
					}
					continue
				}
				got[a.Seq] = a
			}
			if a, ok := got[seq]; ok {
				return a
			}
			select {
			case err := <-done:
				t.Fatalf("the job ended (%v) before answering seq %d:\n%s", err, seq, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("no answer to seq %d in a minute:\n%s", seq, stderr.String())
		return jobcontract.ControlAck{}
	}
	hello := wait(0)
	if hello.Workers != 2 || hello.Iter != 0 || hello.Error != "" || hello.Threads < 1 {
		t.Fatalf("hello %+v, want workers 2 at iter 0", hello)
	}
	intp := func(n int) *int { return &n }
	boolp := func(b bool) *bool { return &b }
	steps := []struct {
		cmd         jobcontract.ControlCommand
		workers     int
		replay      bool
		errContains string
	}{
		{jobcontract.ControlCommand{Seq: 1, Workers: intp(1)}, 1, false, ""},
		{jobcontract.ControlCommand{Seq: 2, Workers: intp(3)}, 3, false, ""},
		{jobcontract.ControlCommand{Seq: 3, Replay: boolp(true)}, 3, true, ""},
		{jobcontract.ControlCommand{Seq: 4, Replay: boolp(false), Workers: intp(0)}, 0, false, ""},
		{jobcontract.ControlCommand{Seq: 4, Workers: intp(2)}, 0, false, "seq 4 is not above the last one (4)"},
		{jobcontract.ControlCommand{Seq: 5, Workers: intp(2)}, 2, false, ""},
		// A launch at 1 core, then at 2: threads and workers together.
		{jobcontract.ControlCommand{Seq: 6, Workers: intp(1), Threads: intp(1)}, 1, false, ""},
		{jobcontract.ControlCommand{Seq: 7, Workers: intp(2), Threads: intp(2)}, 2, false, ""},
	}
	prev := hello
	for _, s := range steps {
		if err := jobcontract.AppendControl(cmdPath, s.cmd); err != nil {
			t.Fatal(err)
		}
		if s.errContains != "" {
			// An error answer is written as the command is read: the
			// next command's answer comes after it.
			continue
		}
		a := wait(s.cmd.Seq)
		if a.Error != "" || a.Workers != s.workers || a.Replay != s.replay || a.Iter <= prev.Iter || a.TS <= prev.TS {
			t.Errorf("answer %+v after %+v, want workers %d replay %v, a later iter and ts", a, prev, s.workers, s.replay)
		}
		if n := children(t, cmd.Process.Pid); n != s.workers {
			t.Errorf("seq %d: %d worker processes, want %d", s.cmd.Seq, n, s.workers)
		}
		if s.cmd.Threads != nil && a.Threads != *s.cmd.Threads {
			t.Errorf("seq %d: answered %d threads, want the %d asked (torch.get_num_threads read back)", s.cmd.Seq, a.Threads, *s.cmd.Threads)
		}
		prev = a
	}
	lines, err := os.ReadFile(ackPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lines), `"seq":4,"error":"seq 4 is not above the last one (4)"`) {
		t.Errorf("no error answer for the repeated seq 4:\n%s", lines)
	}
}

// children counts the live child processes of pid (its loader workers).
func children(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err == nil {
			n += len(strings.Fields(string(b)))
		}
	}
	return n
}
