// Package synthtrain owns synergy's reference training job: a seeded
// dataset generator, three workload presets, a PyTorch-DataLoader-like
// loader and a training loop whose GPU step is emulated with a timed wait
// (GPEmu's idea), writing the metrics stream of docs/job-contract.md. The
// data path is real — real files through the page cache, real decoding on
// real cores — so cgroup CPU and memory limits act on it as on a real job.
//
// The loader runs --workers goroutines, each building whole batches (read,
// decode, augment into a float32 tensor) as a DataLoader worker process
// does; batches reach the loop in order through a queue bounded at
// --prefetch. Every epoch visits every file once in an order shuffled by
// (seed, epoch); the last batch of an epoch may be short. The loop waits for
// a batch (data_wait_s), sleeps on a timer for --gpu-step (step_s measured,
// step_intended_s asked; a timer burns no CPU) and appends one JSON line.
//
// The control channel (jobcontract/control.go; on when
// $SYNERGY_CONTROL_FILE and $SYNERGY_CONTROL_ACK_FILE are both set) lets
// one launch serve every profiling point. The loop answers with a hello
// (seq 0) when the loader's first batch reaches it, then, before every
// batch, applies the command lines appended since (a stat; a read only
// when the file grew), in order. "workers": N replaces the loader's worker
// set in the running pass: the old workers finish the batch each holds and
// exit, N new goroutines build the batches after the last one handed out,
// prefetched batches stay queued, and the loop gets every batch of the pass
// once, in the seeded order; later epochs use N, and without --prefetch the
// queue's bound follows (2 × N). "replay": true hands the last delivered
// batch to the loop again and again while the loader idles once its queue
// is full (the step alone); false goes back to the loader where it was.
// Each command is answered when the first batch under its settings reaches
// the loop — for a new worker count, the first batch the new set built
// (batches carry their builder's generation), not a prefetched one —
// with that moment (ts) and the metrics line that consumes it (iter). A
// command it cannot apply (bad JSON, workers 0 or over 1024, workers under
// --synthetic-data) is answered at once with an error and changes nothing.
// --max-iterations still ends the run.
//
// Presets and their defaults, calibrated on a 2-core machine:
//
//	preset    batch  gpu-step  sample file                            work per sample                       bound by
//	image     32     8ms       JPEG 500x375 q90, ~90 KiB (.jpg)       decode, random resized crop, bilinear  CPU: ~4.7 ms/sample, ~150 ms/batch
//	                                                                  224x224, flip, normalise               on one core; scales with cores
//	audio     16     40ms      16-bit mono PCM WAV, 1-2 MiB (.wav)    read all, energy + zero-crossing       step when cached (~24 MiB/batch,
//	                                                                  features over 1/4 (~0.3 ms)            ~10 ms); fetch under a read limit
//	language  64     50ms      uint16 token ids, 2-8 KiB (.tok)       read, pad/truncate to 2048 (~µs)       step: insensitive to cores, memory
//
// Datasets are ImageFolder-like, DIR/class_NNN/<preset>_NNNNNNN.<ext>, with
// a MANIFEST.json written last at the top (loaders skip top-level files).
// Generation is a pure function of (preset, seed, size, classes): files are
// byte-identical whatever the number of encoding goroutines. Randomness
// comes from the package's own splitmix64 so that it does not change with
// the Go release (the JPEG encoder's output still might).
//
// The package imports the standard library and synergy's stdlib-only leaf
// packages (internal/units, internal/atomicfile) only; cmd/synthtrain is its
// thin main.
package synthtrain
