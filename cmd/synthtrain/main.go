// Command synthtrain is synergy's reference training job: real data loading
// with an emulated GPU step. See models/synthtrain and `synthtrain --help`.
// SIGUSR1 saves a checkpoint and asks Slurm to requeue the job, SIGTERM
// saves and exits, SIGINT stops at once (docs/job-contract.md).
package main

import (
	"context"
	"os"

	"github.com/synergy-sched/synergy/models/synthtrain"
)

func main() {
	os.Exit(synthtrain.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
