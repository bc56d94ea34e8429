package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
)

// Flag names of `synergy profile` about what a profile costs (docs/cost.md).
const (
	flagWindows    = "windows"
	flagTimeBudget = "time-budget"
)

// costFlags are the flags of `synergy profile` that bound and cut its cost.
func costFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: flagWindows, Value: true, DefaultText: "on where the runner can change a running job's limits (local, docker); --windows=false restarts the job for every point",
			Usage: "measure consecutive points of one memory column in windows of one launch, changing the running job's CPU limits between them (the loader keeps the most workers any point needs)"},
		&cli.DurationFlag{Name: flagTimeBudget, DefaultText: "none",
			Usage: "stop the sweep between points once `DURATION` has passed (e.g. 10m); the profile is saved with what was measured and stop_reason time_budget, and --resume goes on"},
	}
}

// parseCostFlags reads --windows and --time-budget.
func parseCostFlags(c *cli.Command, o *profileOptions) error {
	o.cfg.Windows = c.Bool(flagWindows)
	if o.cfg.TimeBudget = c.Duration(flagTimeBudget); o.cfg.TimeBudget < 0 || (c.IsSet(flagTimeBudget) && o.cfg.TimeBudget < time.Second) {
		return fmt.Errorf("--%s: %s is not a duration of at least 1s", flagTimeBudget, o.cfg.TimeBudget)
	}
	return nil
}
