package pytorch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/models/pytorch"
)

// TestWriteProbe_Injects writes the embedded probe to a fresh directory and
// runs Python with it first on PYTHONPATH: the probe starts from there (its
// report appears) and a bad setting is refused with the documented status.
func TestWriteProbe_Injects(t *testing.T) {
	dir := t.TempDir()
	if err := pytorch.WriteProbe(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sitecustomize.py", "synergy_probe.py", "synergy_metrics.py"} {
		want, err := os.ReadFile(map[string]string{"sitecustomize.py": "probe/sitecustomize.py",
			"synergy_probe.py": "probe/synergy_probe.py", "synergy_metrics.py": "synergy_metrics.py"}[f])
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: written copy differs from the source (err %v)", f, err)
		}
	}
	report := filepath.Join(t.TempDir(), "r.json")
	out, err := pyCmd(t, []string{"PYTHONPATH=" + dir, pytorch.ProbeEnvReport + "=" + report}, "-c", "print('ok')").Output()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("python3 with the probe: %v, stdout %q", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report from the written probe: %v\n%s", err, out)
	}
	if !strings.Contains(string(data), `"fallback": "wall_clock"`) {
		t.Errorf("report of a run without a loader lacks the fallback:\n%s", data)
	}

	cmd := pyCmd(t, []string{"PYTHONPATH=" + dir, pytorch.ProbeEnvMaxIterations + "=ten"}, "-c", "print('ran')")
	out, err = cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != pytorch.ProbeExitConfig {
		t.Fatalf("bad %s: exit %v, want %d\n%s", pytorch.ProbeEnvMaxIterations, err, pytorch.ProbeExitConfig, out)
	}
	if !strings.Contains(string(out), "SYNERGY_PROBE_MAX_ITERATIONS: 'ten' is not an integer") || strings.Contains(string(out), "ran") {
		t.Errorf("bad setting's message:\n%s", out)
	}
}
