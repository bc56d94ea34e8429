package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

// scheduleCommand is a placeholder until the scheduler lands (issue 6).
func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "place a queue of jobs on a cluster (not built yet)",
		Action: func(ctx context.Context, c *cli.Command) error {
			return errors.New("schedule: not built yet")
		},
	}
}
