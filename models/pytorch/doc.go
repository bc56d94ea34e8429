// Package pytorch holds synergy's Python side for real PyTorch jobs, and
// embeds the injected DataLoader probe for the profiler.
//
// Python (Debian's /usr/bin/python3 with python3-torch, -torchvision,
// -torchaudio; scripts/install-torch.sh):
//   - synergy_metrics.py (standard library only): the job contract's helper.
//     It wraps a DataLoader to time each batch's data wait and step, appends
//     the metrics stream of docs/job-contract.md to $SYNERGY_METRICS_FILE,
//     adds the contract's flags to argparse, and holds the emulated GPU step
//     (GPEmu's idea: a timed wait of a model's measured step on a V100, P100
//     or K80, from a table with its sources).
//   - train_imagenet.py, train_lm.py, train_speech.py: reference jobs for
//     Synergy's image, language and speech classes on reference_loop.py;
//     gen_data.py writes their datasets (JPEG ImageFolder, token shards, WAV),
//     seeded; measure_jobs.py measures them by hand (cores, page cache).
//   - probe/: the DataLoader probe that profiles an unmodified script
//     (sitecustomize.py starts synergy_probe.py, which patches torch's
//     DataLoader as it loads), configured by SYNERGY_PROBE_* variables.
//   - testdata/: scripts for tests: the ImageNet reference script's shape,
//     two loaders, no loader, a benchmark loop (scripts/bench-probe.sh), and
//     stdlib_train.py, a standard-library stand-in profiled by cmd/synergy.
//
// Go: WriteProbe writes the embedded probe directory for a job's PYTHONPATH,
// and the ProbeEnv* constants name its variables. The Go tests run the
// Python unit tests (skipped, or failed under SYNERGY_REQUIRE=torch, where
// the interpreter lacks torch), compile every script, and read what the
// helper and the probe write with jobcontract.ParseIteration, so `go test
// ./...` covers the Python too. The interpreter is $SYNERGY_PYTHON, else
// /usr/bin/python3.
package pytorch
