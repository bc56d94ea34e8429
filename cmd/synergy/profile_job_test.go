package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/profiler"
)

// TestProfileJobFlags: the probe, loader-only and --env flags reach the
// profiler's configuration, and values that cannot run are refused before
// anything starts, each naming its flag.
func TestProfileJobFlags(t *testing.T) {
	data := t.TempDir()
	py := []string{"--", "python3", "main.py", "{data}", "-j", "{workers}", "-b", "{batch}"}
	o, err := checkProfileFlags(t, 2, 4<<30, append([]string{"--cpus", "1,2", "--data", data,
		"--emulate-gpu", "v100", "--model", "resnet18", "--env", "A=1", "--env", "PYTHONPATH=/x:/y"}, py...)...)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.EmulateGPU != "v100" || o.cfg.Model != "resnet18" || o.cfg.Probe != profiler.ProbeAuto {
		t.Errorf("job setup %+v", o.cfg.JobSetup)
	}
	if !slices.Equal(o.cfg.Env, []string{"A=1", "PYTHONPATH=/x:/y"}) {
		t.Errorf("env %q", o.cfg.Env)
	}
	o, err = checkProfileFlags(t, 2, 4<<30, "--cpus", "1", "--probe", "torch", "--emulate-step", "33ms", "--", "/bin/true")
	if err != nil || o.cfg.EmulateStep != 33*time.Millisecond || o.cfg.Probe != profiler.ProbeTorch {
		t.Errorf("--emulate-step 33ms --probe torch: %+v, %v", o.cfg.JobSetup, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe", "tf"}, `--probe: "tf" is not torch or none`},
		{[]string{"--emulate-step", "0s"}, "--emulate-step: 0s is not a step between 1ms and 1m"},
		{[]string{"--emulate-gpu", "v100"}, "--emulate-gpu: needs --model"},
		{[]string{"--model", "resnet18"}, "--model: only with --emulate-gpu"},
		{[]string{"--emulate-gpu", "v100", "--model", "resnet18", "--emulate-step", "1s"}, "--emulate-step and --emulate-gpu: give one or the other"},
		{[]string{"--probe", "none", "--emulate-step", "1s"}, "--probe none: the loader-only mode"},
		{[]string{"--env", "NOEQUALS"}, `--env: "NOEQUALS" is not KEY=VALUE`},
		{[]string{"--env", "1X=2"}, `--env: "1X=2" is not KEY=VALUE`},
		{[]string{"--env", "SYNERGY_PROBE_WORKERS=3"}, "--env: SYNERGY_PROBE_WORKERS is the profiler's to set"},
		{[]string{"--", "python3", "x.py", "-j", "{worker}"}, "unknown placeholder {worker}"},
		{[]string{"--", "python3", "x.py", "{data}"}, "--data: the command's {data} needs the dataset directory"},
	} {
		args := append([]string{"--cpus", "1"}, tc.args...)
		if !slices.Contains(args, "--") {
			args = append(args, "--", "python3", "x.py")
		}
		_, err := checkProfileFlags(t, 2, 4<<30, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
