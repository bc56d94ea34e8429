// Command synthtrain is synergy's reference training job: real data loading
// with an emulated GPU step. See models/synthtrain and `synthtrain --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/synergy-sched/synergy/models/synthtrain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := synthtrain.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
