package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/joint"
	"github.com/synergy-sched/synergy/sensitivity"
)

// typedRun says which engine runs `synergy simulate`, by the names in
// --policies and --strategies: Gavel's round mechanism on a typed cluster
// (true) when a policy is Gavel's or the joint policy; Synergy's rounds
// when a policy is Synergy's only, or a strategy is one a typed cluster
// does not run. fifo, which both have, goes by the workload: Gavel's with
// --gavel-trace or --gavel-generate, else Synergy's. Names of both kinds
// at once are an error naming them.
func typedRun(c *cli.Command) (bool, error) {
	var typed, synergy []string
	for _, p := range splitList(c.String(simFlagPolicies)) {
		gv, sy := slices.Contains(gavelPolicyNames(), p) || p == joint.Policy, slices.Contains(scheduler.PolicyNames(), p)
		switch {
		case gv && !sy:
			typed = append(typed, p)
		case sy && !gv:
			synergy = append(synergy, p)
		}
	}
	if len(typed) > 0 && len(synergy) > 0 {
		return false, badFlag(simFlagPolicies, fmt.Errorf("%s run on typed GPUs in Gavel's round mechanism, %s in Synergy's rounds: "+
			"give one kind (on a typed cluster Synergy's strategies run under its fifo: --%s %s)",
			strings.Join(typed, ", "), strings.Join(synergy, ", "), simFlagStrategies, strings.Join(joint.StrategyNames(), ",")))
	}
	gavelWorkload := c.IsSet(gvFlagTrace) || c.IsSet(gvFlagGenerate)
	switch {
	case len(typed) > 0:
		return true, nil
	case len(synergy) > 0 && gavelWorkload:
		flag := gvFlagTrace
		if c.IsSet(gvFlagGenerate) {
			flag = gvFlagGenerate
		}
		return false, badFlag(flag, fmt.Errorf("is a typed (Gavel) workload, but --%s names Synergy's %s", simFlagPolicies, strings.Join(synergy, ", ")))
	}
	return gavelWorkload, nil
}

// parseSensitivities reads --sensitivity: "JOBTYPE=zoo:MODEL" or
// "JOBTYPE=PROFILE.json", comma-separated, where JOBTYPE is a Gavel job
// type or its model ("ResNet-50").
func parseSensitivities(spec string) (joint.Sensitivities, error) {
	out := joint.Sensitivities{}
	d := sensitivity.DefaultServer()
	shape := scheduler.ShapeOf(&scheduler.Cluster{Servers: []scheduler.Server{{Name: "default", GPUs: d.GPUs, CPUs: d.CPUs, MemBytes: d.MemBytes}}})
	for _, f := range splitList(spec) {
		name, src, ok := strings.Cut(f, "=")
		name, src = strings.TrimSpace(name), strings.TrimSpace(src)
		if !ok || name == "" || src == "" {
			return nil, fmt.Errorf("%q is not JOBTYPE=zoo:MODEL or JOBTYPE=PROFILE", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%q given twice", name)
		}
		var j *scheduler.Job
		var err error
		if model, isZoo := strings.CutPrefix(src, "zoo:"); isZoo {
			j, err = scheduler.ZooJob(0, model, 0, 1, 1, nil)
		} else {
			var p *sensitivity.Profile
			if p, err = sensitivity.LoadFilled(src); err == nil {
				j, err = scheduler.JobFromProfile(0, p, shape)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = j
	}
	return out, out.Check()
}
