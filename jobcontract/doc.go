// Package jobcontract owns the job contract of docs/job-contract.md, the
// interface between the profiler and a training script: the flags the
// profiler appends (Args), the environment it sets (EnvMetricsFile,
// EnvPoint), and the metrics stream the script writes back, one JSON line
// per iteration: the line's type (Iteration), its writer (AppendIteration),
// its parsers (DecodeIteration, ParseIteration) and a reader of a stream a
// running job appends to (Tailer); and the control channel's two ends
// (control.go: the profiler's ControlWriter, made before the launch and
// written through its descriptor, the LineReader both ends read with,
// ParseControl, ParseAck). The profiler reads the stream through it;
// models/synthtrain writes it through it. Every file a job can touch is
// opened without following a link or waiting on a FIFO, and read in
// bounded pieces. It imports the standard library only.
package jobcontract
