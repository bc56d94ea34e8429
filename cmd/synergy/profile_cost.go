package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
)

// Flag names of `synergy profile` about what a profile costs (docs/cost.md).
const (
	flagWindows    = "windows"
	flagRelaunch   = "relaunch"
	flagTimeBudget = "time-budget"
	flagMemScale   = "mem-scale"
)

// costFlags are the flags of `synergy profile` that bound and cut its cost.
func costFlags() []cli.Flag {
	return []cli.Flag{
		// --windows is gone: a profile is one launch, every point changed
		// in place where the job allows it. Kept hidden to say so.
		&cli.BoolFlag{Name: flagWindows, Hidden: true},
		&cli.BoolFlag{Name: flagRelaunch, DefaultText: "off: one launch serves every point it can",
			Usage: "start the job afresh for every point instead of changing the running job in place (its cgroup's limits, its loader's workers over the control channel, the dataset's page cache): slower by the job's start-up per point; for checking in-place figures against restarts (docs/cost.md)"},
		&cli.DurationFlag{Name: flagTimeBudget, DefaultText: "none",
			Usage: "stop the sweep between points once `DURATION` has passed (e.g. 10m); the profile is saved with what was measured and stop_reason time_budget, and --resume goes on"},
		&cli.FloatFlag{Name: flagMemScale, DefaultText: "auto: from the dataset's size, the read bandwidth, --time-budget and the host's memory",
			Usage: "measure each limited memory point on a random sample of `FRACTION` (0-1) of --data under a limit scaled the same way around the job's own memory: same page-cache hit fraction, a fraction of the reading (shuffled passes over many files only; 1: the whole dataset; the profile's cost says which fraction and why; see docs/cost.md)"},
	}
}

// parseCostFlags reads --time-budget and --mem-scale --relaunch (and refuses --windows).
func parseCostFlags(c *cli.Command, o *profileOptions) error {
	if v := c.Float(flagMemScale); c.IsSet(flagMemScale) && !(v > 0 && v <= 1) {
		return fmt.Errorf("--%s: %g is not a fraction in (0,1]", flagMemScale, v)
	} else if c.IsSet(flagMemScale) && c.String(flagData) == "" {
		return fmt.Errorf("--%s needs --%s: it samples the dataset", flagMemScale, flagData)
	} else {
		o.cfg.MemScale = v
	}
	o.cfg.Relaunch = c.Bool(flagRelaunch)
	if c.IsSet(flagWindows) {
		return fmt.Errorf("--%s is gone: every profile is one launch of the job, its points changed in place where the job allows it (docs/cost.md, \"One launch\")", flagWindows)
	}
	if o.cfg.TimeBudget = c.Duration(flagTimeBudget); o.cfg.TimeBudget < 0 || (c.IsSet(flagTimeBudget) && o.cfg.TimeBudget < time.Second) {
		return fmt.Errorf("--%s: %s is not a duration of at least 1s", flagTimeBudget, o.cfg.TimeBudget)
	}
	return nil
}
