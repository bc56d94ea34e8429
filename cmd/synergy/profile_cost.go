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
	flagMemScale   = "mem-scale"
)

// costFlags are the flags of `synergy profile` that bound and cut its cost.
func costFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: flagWindows, DefaultText: "off: every point restarts the job",
			Usage: "measure consecutive points with memory unlimited that need the same loader workers in windows of one launch, changing the running job's CPU limits between them (a point under a memory limit always starts cold and measures whole passes; runners that cannot change a running job's limits restart it). Worth it with --strategy axes or grid on a job slow to start; an optimistic profile jumps between the CPU axis' ends and loader worker counts, so windows serve about one of its points in eleven, and an in-place point's agreement with a restart is not shown within 5% (docs/cost.md)"},
		&cli.DurationFlag{Name: flagTimeBudget, DefaultText: "none",
			Usage: "stop the sweep between points once `DURATION` has passed (e.g. 10m); the profile is saved with what was measured and stop_reason time_budget, and --resume goes on"},
		&cli.FloatFlag{Name: flagMemScale, DefaultText: "auto: from the dataset's size, the read bandwidth, --time-budget and the host's memory",
			Usage: "measure each limited memory point on a random sample of `FRACTION` (0-1) of --data under a limit scaled the same way around the job's own memory: same page-cache hit fraction, a fraction of the reading (shuffled passes over many files only; 1: the whole dataset; the profile's cost says which fraction and why; see docs/cost.md)"},
	}
}

// parseCostFlags reads --windows, --time-budget and --mem-scale.
func parseCostFlags(c *cli.Command, o *profileOptions) error {
	if v := c.Float(flagMemScale); c.IsSet(flagMemScale) && !(v > 0 && v <= 1) {
		return fmt.Errorf("--%s: %g is not a fraction in (0,1]", flagMemScale, v)
	} else if c.IsSet(flagMemScale) && c.String(flagData) == "" {
		return fmt.Errorf("--%s needs --%s: it samples the dataset", flagMemScale, flagData)
	} else {
		o.cfg.MemScale = v
	}
	o.cfg.Windows = c.Bool(flagWindows)
	if o.cfg.TimeBudget = c.Duration(flagTimeBudget); o.cfg.TimeBudget < 0 || (c.IsSet(flagTimeBudget) && o.cfg.TimeBudget < time.Second) {
		return fmt.Errorf("--%s: %s is not a duration of at least 1s", flagTimeBudget, o.cfg.TimeBudget)
	}
	return nil
}
