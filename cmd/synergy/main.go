// Command synergy profiles training jobs' sensitivity to CPU and memory and
// schedules them on GPU clusters by it. See the README and docs/.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/reap"
)

// version is stamped by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	// The local runner re-executes this binary as a gate that holds a job
	// until it is inside its cgroups (runner/local: GateMain).
	if local.IsGate(os.Args) {
		local.GateMain()
	}
	// A profile run starts this binary as its watchdog (runner/reap).
	if reap.IsWatchdog(os.Args) {
		reap.WatchdogMain()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The process's streams are set here only: every command prints
	// through the root command's Writer and ErrWriter.
	app := newApp()
	app.Writer, app.ErrWriter = os.Stdout, os.Stderr
	if err := app.Run(ctx, os.Args); err != nil {
		fmt.Fprintln(app.ErrWriter, "synergy:", err)
		os.Exit(1)
	}
}

func newApp() *cli.Command {
	return &cli.Command{
		Name:    "synergy",
		Usage:   "profile DL training jobs' CPU and memory sensitivity, and schedule GPU clusters by it",
		Version: version,
		Commands: []*cli.Command{
			profileCommand(),
			scheduleCommand(),
			simulateCommand(),
			matrixCommand(),
			k8sCommand(),
			slurmCommand(),
			cleanupCommand(),
		},
	}
}
