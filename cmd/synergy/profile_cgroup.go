package main

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/runner/local"
)

// Flag names of the local runner's cgroup placement.
const (
	flagCgroupDriver = "cgroup-driver"
	flagCgroupParent = "cgroup-parent"
)

// cgroupOptions say where the local runner makes job cgroups.
type cgroupOptions struct {
	driver, parent string
}

func cgroupFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagCgroupDriver, Value: local.DriverAuto, Sources: cli.EnvVars("SYNERGY_CGROUP_DRIVER"),
			Usage: "local runner on a cgroup v2 host: `DRIVER` that makes each point's cgroup: systemd (a transient scope with " +
				"Delegate=yes in " + local.SystemdSlice + ", through systemd's D-Bus API), cgroupfs (a synergy/ cgroup made under " +
				"the nearest ancestor of this process's cgroup that can hold the cpu, cpuset, memory and io controllers, or under " +
				"--cgroup-parent), or auto (systemd where it is PID 1, else cgroupfs); v1 hosts use cgroupfs"},
		&cli.StringFlag{Name: flagCgroupParent, Sources: cli.EnvVars("SYNERGY_CGROUP_PARENT"), DefaultText: "chosen by the driver",
			Usage: "local runner, cgroupfs driver: make the points' cgroups under `PATH`, relative to the cgroup root (e.g. /synergy); " +
				"made when missing, with the controllers enabled down to it, and never removed"},
	}
}

func parseCgroupFlags(c *cli.Command, o *profileOptions) error {
	o.cgroup.driver = c.String(flagCgroupDriver)
	if !slices.Contains(local.Drivers(), o.cgroup.driver) {
		return fmt.Errorf("--%s: %q is not a cgroup driver (%s)", flagCgroupDriver, o.cgroup.driver, strings.Join(local.Drivers(), ", "))
	}
	o.cgroup.parent = c.String(flagCgroupParent)
	if p := o.cgroup.parent; p != "" {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsAny(p, "\n\x00") {
			return fmt.Errorf("--%s: %q is not a clean absolute cgroup path (e.g. /synergy)", flagCgroupParent, p)
		}
		if o.cgroup.driver == local.DriverSystemd {
			return fmt.Errorf("--%s: only with --%s=%s (the systemd driver puts each point in a scope in %s)",
				flagCgroupParent, flagCgroupDriver, local.DriverCgroupfs, local.SystemdSlice)
		}
	}
	if (c.IsSet(flagCgroupDriver) || o.cgroup.parent != "") && o.runnerName != "local" {
		return fmt.Errorf("--%s and --%s: only with --%s=local (Docker places containers with its own cgroup driver)",
			flagCgroupDriver, flagCgroupParent, flagRunner)
	}
	return nil
}
