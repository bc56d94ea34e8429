package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/profiler"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/hostlock"
	"github.com/synergy-sched/synergy/runner/reap"
)

const (
	cleanFlagDocker = "docker"
	cleanFlagJSON   = "json"
)

func cleanupCommand() *cli.Command {
	return &cli.Command{
		Name:  "cleanup",
		Usage: "remove what synergy runs that died (kill -9, a crash) left on this host",
		Description: "Removes the job cgroups (cgroup v1 and v2), the Docker containers (label synergy.owner) and the work\n" +
			"directories ($TMPDIR/synergy-profile-PID-START-*) of synergy runs that are no longer alive, killing any job\n" +
			"process still in them, and lists what it removed. Each of these carries its run's PID and process start\n" +
			"time, so the things of a run still going are never touched (each run holds its job cgroups open: a cgroup\n" +
			"named after a live process that does not hold it, with a process in it, is a job's decoy and is removed too).\n" +
			"Every `synergy profile` does the same first,\n" +
			"and a watchdog process does it the moment a profile run dies; this command is for doing it on demand.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: cleanFlagDocker, Value: "auto", Usage: "`MODE` for containers: auto (when a Docker socket is there), yes (fail if the daemon cannot be reached), no"},
			&cli.BoolFlag{Name: cleanFlagJSON, Usage: "print {\"removed\": [...], \"skipped\": [...]} as JSON"},
		},
		Action: runCleanup,
	}
}

func runCleanup(ctx context.Context, c *cli.Command) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("cleanup takes no arguments (got %q)", c.Args().First())
	}
	var o reap.Options
	switch m := c.String(cleanFlagDocker); m {
	case "auto":
		o.Docker = reap.DockerSocketPresent()
	case "yes":
		o.Docker, o.RequireDocker = true, true
	case "no":
	default:
		return fmt.Errorf("--%s: %q is not one of auto, yes, no", cleanFlagDocker, m)
	}
	rep, err := reap.Orphans(ctx, o)
	out := c.Root().Writer
	if c.Bool(cleanFlagJSON) {
		if rep.Removed == nil {
			rep.Removed = []string{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil {
			return jerr
		}
	} else {
		printCleanup(out, rep)
	}
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}

func printCleanup(w io.Writer, rep reap.Report) {
	if len(rep.Removed) == 0 {
		fmt.Fprintln(w, "nothing to clean up: no cgroup, container or work directory of a dead synergy run")
	}
	// A cgroup's name is a job's to choose (a decoy named like a run's):
	// escaped, as tables are.
	for _, r := range rep.Removed {
		fmt.Fprintln(printable{w}, "removed", r)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(printable{w}, "skipped", s)
	}
}

// runGuard is what a profile run holds on this host (runner/hostlock,
// runner/reap): the --out lock, the watchdog, the dataset lock and, once
// share has run, its cores.
type runGuard struct {
	undo []func()
	ds   *hostlock.Dataset
}

func (g *runGuard) release() {
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
	g.undo = nil
}

// guardRun prepares a profile run on this host: it locks the profile file
// (one run writes one --out), reaps what dead runs left (reporting it on
// stderr), starts the watchdog that reaps this run's own leftovers if it
// dies, and takes the dataset's lock exclusive (the cold-read probe that
// follows evicts it) when it will be probed. Each wait for another run's
// dataset lock lasts at most hostWait (0: no bound). release undoes it all.
func guardRun(ctx context.Context, stderr io.Writer, runnerName string, hostWait time.Duration, cfg *profiler.Config) (*runGuard, error) {
	g := &runGuard{}
	lock, err := hostlock.Out(cfg.Out)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagOut, err)
	}
	g.undo = append(g.undo, func() { _ = lock.Release() })
	o := reap.Options{Docker: runnerName == "docker"}
	rep, err := reap.Orphans(ctx, o)
	for _, r := range rep.Removed {
		fmt.Fprintln(printable{stderr}, "cleaned up after a dead synergy run: removed", r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "warning: cleaning up after dead synergy runs:", err)
	}
	wd, err := reap.Watch(o)
	if err != nil {
		g.release()
		return nil, err
	}
	g.undo = append(g.undo, func() { _ = wd.Close() })
	if cfg.DataDir != "" {
		say := func(msg string) { fmt.Fprintln(stderr, msg) }
		if g.ds, err = hostlock.OpenDataset(ctx, hostlock.Dir(), cfg.DataDir, hostWait, say); err != nil {
			g.release()
			return nil, fmt.Errorf("--%s: %w", flagData, err)
		}
		g.undo = append(g.undo, g.ds.Release)
		if !cfg.Resume {
			if err := g.ds.Exclusive(); err != nil {
				g.release()
				return nil, fmt.Errorf("--%s: %w", flagData, err)
			}
		}
	}
	return g, nil
}

// share makes the run a good neighbour of other synergy runs on this host:
// it claims the cores its largest point needs, waiting while other runs
// hold them, and pins every point to them; and it routes page-cache use of
// the dataset through the dataset lock, held from a point's cache
// preparation until its job has ended.
func (g *runGuard) share(ctx context.Context, cfg *profiler.Config, deps *profiler.Deps, hostWait time.Duration, stderr io.Writer) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("read this process's CPUs: %w", err)
	}
	var avail []int
	for c := 0; c < len(set)*64 && len(avail) < set.Count(); c++ {
		if set.IsSet(c) {
			avail = append(avail, c)
		}
	}
	need := int(math.Ceil(slices.Max(cfg.CPUs)))
	dir := hostlock.Dir()
	cores, err := hostlock.ClaimCores(ctx, dir, need, avail, hostWait, func(msg string) { fmt.Fprintln(stderr, msg) })
	if errors.Is(err, hostlock.ErrGaveUp) {
		return fmt.Errorf("--%s %v: %w", flagHostWait, hostWait, err)
	}
	if err != nil {
		return fmt.Errorf("--%s: %w", flagCPUs, err)
	}
	g.undo = append(g.undo, cores.Release)
	fmt.Fprintf(stderr, "points run on CPU %s, claimed for this run in %s (other synergy runs use other cores)\n",
		runner.FormatCPUSet(cores.CPUs()), filepath.Join(dir, "cores"))
	pinned := hostlock.Pinned{Runner: deps.Runner, Cores: cores}
	if g.ds != nil {
		g.ds.Release() // the cold-read probe is over
		if deps.Cache != nil {
			deps.Cache = hostlock.LockedCache{PageCache: deps.Cache, Lock: g.ds}
			pinned.Dataset = g.ds
		}
	}
	deps.Runner = pinned
	return nil
}
