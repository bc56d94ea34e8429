package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

// simulateCommand is a placeholder until the scheduler lands (issue 6).
func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "replay a trace on a simulated cluster (not built yet)",
		Action: func(ctx context.Context, c *cli.Command) error {
			return errors.New("simulate: not built yet")
		},
	}
}
