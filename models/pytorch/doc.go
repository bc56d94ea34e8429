// Package pytorch holds synergy's job-contract helper for real frameworks,
// in Python: synergy_metrics.py (standard library only) wraps a PyTorch
// DataLoader iterator to time each batch's data wait and step and appends
// the metrics stream of docs/job-contract.md to $SYNERGY_METRICS_FILE, and
// adds the contract's flags to an argparse parser; train_imagenet.py is a
// reference ImageNet-style training script (torchvision ImageFolder,
// DataLoader workers, ResNet-18) that uses it; testdata/stdlib_train.py is
// a standard-library stand-in of the same shape that cmd/synergy's
// end-to-end test profiles (torch is not installed on the test machines).
// The package has no Go code of its own: its Go test runs the Python unit
// tests, compiles the training script, and checks that the lines the
// helper writes parse with jobcontract.ParseIteration, so `go test ./...`
// covers the Python too.
package pytorch
