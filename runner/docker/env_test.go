package docker

import (
	"slices"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/synergy-sched/synergy/runner"
)

// The probe directory is mounted read-only at ProbeMnt, and each element
// of PYTHONPATH is rewritten on its own: the probe's to the mount, the
// metrics directory's to its mount, the rest left alone. A plain variable
// holding a ':' is not split.
func TestProbeDir_MountAndEnv(t *testing.T) {
	job := runner.Job{
		Name: "j", Argv: []string{"python3", "/host/probe/x.py"},
		DataDir: "/host/data", MetricsDir: "/host/m", ProbeDir: "/host/probe",
		Env: []string{
			"PYTHONPATH=/host/probe:/opt/lib:/host/m/extra",
			"SYNERGY_METRICS_FILE=/host/m/metrics.jsonl",
			"SYNERGY_PROBE_REPORT=/host/m/probe-report.json",
			"NOTE=/host/probe:/host/data",
		},
	}
	o := testOptions()
	cfg, err := containerConfig(job, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PYTHONPATH=" + ProbeMnt + ":/opt/lib:" + o.MetricsMnt + "/extra",
		"SYNERGY_METRICS_FILE=" + o.MetricsMnt + "/metrics.jsonl",
		"SYNERGY_PROBE_REPORT=" + o.MetricsMnt + "/probe-report.json",
		"NOTE=/host/probe:/host/data",
	}
	if !slices.Equal(cfg.Env, want) {
		t.Errorf("Env = %q\nwant  %q", cfg.Env, want)
	}
	if cfg.Cmd[0] != ProbeMnt+"/x.py" {
		t.Errorf("argv path under ProbeDir = %q, want it under %s", cfg.Cmd[0], ProbeMnt)
	}
	hc, err := hostConfig(job, o, []int{0, 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	pm := mount.Mount{Type: mount.TypeBind, Source: "/host/probe", Target: ProbeMnt, ReadOnly: true}
	if !slices.Contains(hc.Mounts, pm) {
		t.Errorf("Mounts = %+v, want %+v among them", hc.Mounts, pm)
	}
	job.ProbeDir = "relative/probe"
	if _, err := hostConfig(job, o, []int{0, 1}, ""); err == nil {
		t.Errorf("a relative ProbeDir was mounted")
	}
}
