package main

import (
	"strings"
	"testing"
)

func TestSlurm_FlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"slurm", "submit", "--", "train.sh"}, "give --profile P.json or --profile-first"},
		{[]string{"slurm", "submit", "--profile", "p.json", "--profile-first", "--", "train.sh"}, "give --profile P.json or --profile-first"},
		{[]string{"slurm", "submit", "--profile-first", "--dry-run", "--", "train.sh"}, "--profile-first runs a profiling job: not with --dry-run"},
		{[]string{"slurm", "submit", "--profile", "p.json", "--gpus", "-1", "--", "train.sh"}, "--gpus: -1: must not be negative"},
		{[]string{"slurm", "place", "--strategy", "nosuch"}, `--strategy: unknown strategy "nosuch"`},
		{[]string{"slurm", "place", "--policy", "nosuch"}, `--policy: unknown policy "nosuch"`},
		{[]string{"slurm", "place", "extra"}, `unexpected argument "extra"`},
		{[]string{"slurm", "watch", "--interval", "0s"}, "--interval: 0s: must be positive"},
		{[]string{"slurm", "watch", "--round", "0s"}, "--round: 0s: must be positive"},
		{[]string{"slurm", "watch", "--round", "300s", "--grace", "0s"}, "--grace: 0s: must be positive"},
		{[]string{"slurm", "watch", "--round", "300s", "--policy", "nosuch"}, `--policy: unknown policy "nosuch"`},
		{[]string{"slurm", "cluster", "extra"}, `unexpected argument "extra"`},
		{[]string{"slurm", "runs"}, "--jobcomp: required"},
		{[]string{"slurm", "runs", "--jobcomp", "/nonexistent/jobcomp.txt"}, "--jobcomp: open /nonexistent/jobcomp.txt"},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("synergy %s: error %v, want it to contain %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
