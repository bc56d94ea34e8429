"""Tests of synergy_metrics (python3 -m unittest, from this directory).

Durations come from an injected fake clock that the fake loader and the loop
body advance, so the expected figures are exact and nothing depends on how
fast this machine is.
"""

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import synergy_metrics
from synergy_metrics import SynergyMetrics, add_contract_args, batch_size

HERE = os.path.dirname(os.path.abspath(__file__))


class FakeClock:
    def __init__(self, mono=100.0, wall=1.7e9):
        self.mono, self.wall = mono, wall

    def advance(self, s):
        self.mono += s
        self.wall += s

    def perf(self):
        return self.mono

    def time(self):
        return self.wall


class SlowLoader:
    """Yields batches (lists of n samples), each taking wait_s of the fake clock to arrive."""

    def __init__(self, clock, sizes, wait_s):
        self.clock, self.sizes, self.wait_s = clock, sizes, wait_s

    def __iter__(self):
        for n in self.sizes:
            self.clock.advance(self.wait_s)
            yield [0] * n


class Shaped:
    def __init__(self, *shape):
        self.shape = shape


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "metrics.jsonl")
        self.clock = FakeClock()

    def metrics(self, **kw):
        return SynergyMetrics(self.path, clock=self.clock.perf, wall=self.clock.time, **kw)

    def lines(self):
        with open(self.path, "rb") as f:
            data = f.read()
        self.assertTrue(data.endswith(b"\n"), "last line not terminated: %r" % data[-40:])
        return [json.loads(l) for l in data.decode().splitlines()]

    def test_wrap_times_data_wait_and_step(self):
        with self.metrics() as m:
            for _ in m.wrap(SlowLoader(self.clock, [32, 32, 7], wait_s=0.25)):
                self.clock.advance(0.5)  # the step
        got = self.lines()
        self.assertEqual([l["iter"] for l in got], [0, 1, 2])
        self.assertEqual([l["samples"] for l in got], [32, 32, 7])
        for l in got:
            self.assertAlmostEqual(l["data_wait_s"], 0.25)
            self.assertAlmostEqual(l["step_s"], 0.5)
            self.assertEqual(l["epoch"], 0)
            self.assertNotIn("emulated", l)
        # ts is the wall clock at each iteration's end: 1.7e9 + k * 0.75
        for k, l in enumerate(got, start=1):
            self.assertAlmostEqual(l["ts"], 1.7e9 + k * 0.75, places=6)

    def test_step_done_ends_the_step_and_counts(self):
        with self.metrics() as m:
            seen = []
            for _ in m.wrap(SlowLoader(self.clock, [4, 4, 4], wait_s=0.1)):
                self.clock.advance(0.2)
                seen.append(m.step_done())
                self.clock.advance(1.0)  # after step_done: not part of the step, nor of the next wait
        self.assertEqual(seen, [1, 2, 3])
        got = self.lines()
        self.assertEqual(len(got), 3, "step_done and the loop's next() must not both write")
        for l in got:
            self.assertAlmostEqual(l["step_s"], 0.2)
            self.assertAlmostEqual(l["data_wait_s"], 0.1)

    def test_break_writes_the_last_iteration(self):
        m = self.metrics()
        for i, _ in enumerate(m.wrap(SlowLoader(self.clock, [8] * 10, wait_s=0.1))):
            self.clock.advance(0.3)
            if i == 3:
                break
        # Leaving the loop closes the generator: iteration 3 is written
        # before close(), with its step ending at the break.
        got = self.lines()
        self.assertEqual([l["iter"] for l in got], [0, 1, 2, 3])
        self.assertAlmostEqual(got[-1]["step_s"], 0.3)
        m.close()
        self.assertEqual(len(self.lines()), 4)

    def test_epochs_and_global_iter(self):
        with self.metrics() as m:
            for _ in range(2):  # epoch taken from the number of wrap() calls
                for _ in m.wrap(SlowLoader(self.clock, [2, 2], wait_s=0.01)):
                    pass
            for _ in m.wrap(SlowLoader(self.clock, [2], wait_s=0.01), epoch=7):
                pass
        got = self.lines()
        self.assertEqual([(l["iter"], l["epoch"]) for l in got], [(0, 0), (1, 0), (2, 1), (3, 1), (4, 7)])

    def test_lines_are_flushed_as_written(self):
        m = self.metrics()
        it = m.wrap(SlowLoader(self.clock, [1, 1, 1], wait_s=0.01))
        next(it)
        self.assertFalse(os.path.exists(self.path) and os.path.getsize(self.path) > 0, "written before the step ended")
        next(it)
        self.assertEqual(len(self.lines()), 1, "the first iteration is on disk while the job runs, before close()")
        m.close()
        self.assertEqual(len(self.lines()), 2)

    def test_appends_to_existing_file(self):
        with open(self.path, "w") as f:
            f.write('{"iter":0,"samples":1,"data_wait_s":0,"step_s":0,"ts":1}\n')
        with self.metrics() as m:
            m.record(samples=3, data_wait_s=0.5, step_s=0.25)
        got = self.lines()
        self.assertEqual(len(got), 2)
        self.assertEqual(got[1], {"iter": 0, "samples": 3, "data_wait_s": 0.5, "step_s": 0.25, "ts": 1.7e9})

    def test_fixed_step_names_no_gpu(self):
        path = os.path.join(tempfile.mkdtemp(), "m.jsonl")
        self.addCleanup(os.remove, path)
        clock = FakeClock()
        with SynergyMetrics(path, emulated=synergy_metrics.fixed_step(0.01), clock=clock.perf, wall=clock.time) as m:
            for _ in m.wrap([[0] * 4]):
                clock.advance(0.01)
                m.step_done()
        with open(path) as f:
            (line,) = [json.loads(l) for l in f]
        self.assertTrue(line["emulated"])
        self.assertNotIn("emulated_gpu", line, "a fixed wait stands for no GPU type")

    def test_emulated_and_intended(self):
        with self.metrics(emulated=True) as m:
            for _ in m.wrap(SlowLoader(self.clock, [5], wait_s=0)):
                self.clock.advance(0.009)
                m.step_done(intended_s=0.008, samples=6)
        (l,) = self.lines()
        self.assertTrue(l["emulated"])
        self.assertAlmostEqual(l["step_intended_s"], 0.008)
        self.assertAlmostEqual(l["step_s"], 0.009)
        self.assertEqual(l["samples"], 6)

    def test_disabled_without_env(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(synergy_metrics.ENV_METRICS_FILE, None)
            m = SynergyMetrics(clock=self.clock.perf, wall=self.clock.time)
            self.assertFalse(m.enabled)
            for _ in m.wrap([[1, 2], [3]]):
                pass
            self.assertEqual(m.step_done(), 2, "iterations are still counted for --max-iterations")
            m.close()
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_path_from_env(self):
        with mock.patch.dict(os.environ, {synergy_metrics.ENV_METRICS_FILE: self.path, synergy_metrics.ENV_POINT: "cpus=2 mem=1GiB"}):
            with SynergyMetrics(clock=self.clock.perf, wall=self.clock.time) as m:
                self.assertTrue(m.enabled)
                self.assertEqual(m.point, "cpus=2 mem=1GiB")
                for _ in m.wrap([[1, 2, 3]]):
                    pass
        self.assertEqual(self.lines()[0]["samples"], 3)

    def test_uncountable_batch_is_a_clear_error(self):
        m = self.metrics()
        with self.assertRaisesRegex(ValueError, "cannot count the samples in a batch of type object"):
            for _ in m.wrap([object()]):
                pass
        m.close()

    def test_samples_function(self):
        with self.metrics() as m:
            for _ in m.wrap([object(), object()], samples=lambda b: 16):
                pass
        self.assertEqual([l["samples"] for l in self.lines()], [16, 16])


class GPUStepTest(unittest.TestCase):
    def test_table_lookup_and_batch_scaling(self):
        # (model, gpu, batch) -> (step seconds, reference batch, label)
        cases = [
            # GPEmu ResNet-18 V100 b256: 66.7 + 197.5 = 264.2 ms; b32: 264.2 * 32/256 = 33.025 ms
            ("resnet18", "v100", 256, 0.2642, 256, "gpemu v100 resnet18 batch 256: 264.2 ms"),
            ("resnet18", "Tesla-V100-SXM2-16GB", 32, 0.033025, 256,
             "gpemu v100 resnet18 batch 256: 264.2 ms, scaled to batch 32"),
            # Gavel LM V100 b20: 64.742 steps/s -> 15.446 ms; b32 is nearer 40 (x1.25) than 20 (x1.6):
            # 1/45.237 * 32/40 = 17.685 ms
            ("lstm", "v100", 20, 1 / 64.742, 20, "gavel v100 lstm batch 20: 15.4 ms"),
            ("LM", "v100", 32, 1 / 45.237 * 32 / 40, 40, "gavel v100 lstm batch 40: 22.1 ms, scaled to batch 32"),
            # Synergy's zoo mobilenet: iter_time 0.71 / speed-up 1.55 at b512 = 458.06 ms; b64: /8
            ("mobilenet_v2", "v100", 64, 0.71 / 1.55 / 8, 512, "synergy v100 mobilenet batch 512: 458.1 ms, scaled to batch 64"),
            # Gavel ResNet-50 K80 b64: 0.619 steps/s
            ("resnet50", "k80", 64, 1 / 0.619, 64, "gavel k80 resnet50 batch 64: 1615.5 ms"),
            # b24: 32 (x1.33) is nearer by ratio than 16 (x1.5): 1/7.869 * 24/32 = 95.3 ms
            ("transformer", "p100", 24, 1 / 7.869 * 24 / 32, 32, "gavel p100 transformer batch 32: 127.1 ms, scaled to batch 24"),
        ]
        for model, gpu, batch, want_s, want_ref, want_label in cases:
            with self.subTest(model=model, gpu=gpu, batch=batch):
                st = synergy_metrics.gpu_step(model, gpu, batch)
                self.assertAlmostEqual(st.step_s, want_s, places=9)
                self.assertEqual(st.ref_batch, want_ref)
                self.assertEqual(st.label, want_label)
                self.assertEqual(st.scaled, batch != want_ref)

    def test_every_entry_positive_and_sourced(self):
        for (model, gpu), (source, points) in synergy_metrics.GPU_STEPS.items():
            with self.subTest(model=model, gpu=gpu):
                self.assertIn(source, ("gpemu", "synergy", "gavel"))
                self.assertTrue(points)
                for b, s in points:
                    self.assertGreater(b, 0)
                    self.assertTrue(0.001 < s < 10, "%s on %s: %g s per step" % (model, gpu, s))

    def test_unknown_pair_lists_known(self):
        with self.assertRaisesRegex(ValueError, r"no measured step time for model 'resnet18' on GPU 'a100'; known.*resnet18@v100"):
            synergy_metrics.gpu_step("resnet18", "a100", 32)
        with self.assertRaisesRegex(ValueError, "batch 0 must be >= 1"):
            synergy_metrics.gpu_step("resnet18", "v100", 0)

    def parse(self, argv, model=None):
        p = argparse.ArgumentParser()
        add_contract_args(p)
        synergy_metrics.add_emulation_args(p, model=model)
        return p.parse_args(argv)

    def test_emulated_step_from_flags(self):
        a = self.parse(["--emulate-gpu", "v100", "-b", "64"], model="lstm")
        st = synergy_metrics.emulated_step(a, a.batch)
        self.assertEqual((st.model, st.gpu, st.batch, st.ref_batch), ("lstm", "v100", 64, 80))
        self.assertIsNone(synergy_metrics.emulated_step(a, a.batch, cuda=True), "with CUDA the real step runs")
        self.assertIsNone(synergy_metrics.emulated_step(self.parse([]), 32), "nothing asked: the real step runs")
        # --emulate-model overrides the script's model; the script's own argument wins over both.
        a = self.parse(["--emulate-gpu", "v100", "--emulate-model", "m5"], model="lstm")
        self.assertEqual(synergy_metrics.emulated_step(a, 32).model, "m5")
        self.assertEqual(synergy_metrics.emulated_step(a, 32, model="alexnet").model, "alexnet")
        fixed = synergy_metrics.emulated_step(self.parse(["--emulate-step", "0.02"]), 32)
        self.assertEqual((fixed.step_s, fixed.source, fixed.label), (0.02, "fixed", "fixed 20.0 ms"))

    def test_emulated_step_errors_name_the_flag(self):
        with self.assertRaisesRegex(ValueError, r"^--emulate-gpu h100: no measured step time for model 'resnet18'"):
            synergy_metrics.emulated_step(self.parse(["--emulate-gpu", "h100"]), 32, model="resnet18")
        with self.assertRaisesRegex(ValueError, r"--emulate-model: the script does not say which model"):
            synergy_metrics.emulated_step(self.parse(["--emulate-gpu", "v100"]), 32)

    def test_timed_wait_reports_what_passed(self):
        clock = FakeClock()
        slept = []

        def sleep(s):
            slept.append(s)
            clock.advance(s * 1.2)  # an overshoot, as under load

        got = synergy_metrics.timed_wait(0.05, clock=clock.perf, sleep=sleep)
        self.assertEqual(slept, [0.05])
        self.assertAlmostEqual(got, 0.06)
        self.assertEqual(synergy_metrics.timed_wait(0, clock=clock.perf, sleep=sleep), 0)
        self.assertEqual(slept, [0.05], "a zero wait does not sleep")

    def test_stream_names_the_source(self):
        st = synergy_metrics.gpu_step("resnet18", "v100", 32)
        path = os.path.join(tempfile.mkdtemp(), "m.jsonl")
        self.addCleanup(os.remove, path)
        clock = FakeClock()
        with SynergyMetrics(path, emulated=st, clock=clock.perf, wall=clock.time) as m:
            for _ in m.wrap([[0] * 32]):
                clock.advance(0.04)
                m.step_done(intended_s=st.step_s)
        with open(path) as f:
            (line,) = [json.loads(l) for l in f]
        self.assertEqual((line["emulated"], line["step_source"]), (True, st.label))
        self.assertEqual(line["emulated_gpu"], "v100", "the profile records it as gpu.type")
        self.assertAlmostEqual(line["step_intended_s"], 0.033025)
        self.assertAlmostEqual(line["step_s"], 0.04)


class BatchSizeTest(unittest.TestCase):
    def test_table(self):
        cases = [
            ("tensor", Shaped(32, 3, 224, 224), 32),
            ("(images, labels)", (Shaped(16, 3), Shaped(16)), 16),
            ("[images, labels]", [Shaped(8, 3), Shaped(8)], 8),
            ("dict of tensors", {"input_ids": Shaped(4, 128), "labels": Shaped(4)}, 4),
            ("list of samples", [1, 2, 3], 3),
            ("list of strings", ["a b", "c d e"], 2),
            ("(list of strings, labels)", (["x", "y", "z"], Shaped(3)), 3),
            ("scalar shape", Shaped(), None),
            ("object", object(), None),
            ("empty dict", {}, None),
        ]
        for name, batch, want in cases:
            with self.subTest(name):
                self.assertEqual(batch_size(batch), want)


class ContractArgsTest(unittest.TestCase):
    def parser(self, **kw):
        return add_contract_args(argparse.ArgumentParser(), **kw)

    def test_defaults(self):
        with mock.patch.object(synergy_metrics.os, "sched_getaffinity", return_value={0, 1, 2}, create=True):
            a = self.parser(batch=256).parse_args([])
        self.assertEqual((a.batch, a.workers, a.max_iterations, a.data, a.synthetic_data), (256, 3, 0, None, False))

    def test_profiler_flags_appended_last_win(self):
        # The user's own flags first, then what synergy profile appends.
        argv = ["-b", "64", "--workers", "8", "--max_iterations", "5",
                "--batch", "32", "--workers", "2", "--max-iterations", "400", "--data", "/datadrive"]
        a = self.parser().parse_args(argv)
        self.assertEqual((a.batch, a.workers, a.max_iterations, a.data), (32, 2, 400, "/datadrive"))

    def test_short_and_synthetic(self):
        a = self.parser().parse_args(["-b", "4", "-j", "1", "--synthetic-data"])
        self.assertEqual((a.batch, a.workers, a.synthetic_data), (4, 1, True))

    def test_bad_value_names_the_flag(self):
        p = self.parser()
        p.exit_on_error = False  # Python >= 3.9; older versions exit, which is also an error
        with self.assertRaises((argparse.ArgumentError, SystemExit)) as cm:
            with mock.patch("sys.stderr"):
                p.parse_args(["--batch", "many"])
        if isinstance(cm.exception, argparse.ArgumentError):
            self.assertIn("--batch", str(cm.exception))


class TrainImagenetArgsTest(unittest.TestCase):
    """train_imagenet.py's command line (importing it needs no torch)."""

    def parse(self, argv):
        import train_imagenet
        with mock.patch("sys.stderr"):
            return train_imagenet.parse_args(argv)

    def test_profiler_flags(self):
        d = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, d)
        a = self.parse(["--arch", "resnet50", "-b", "64", "--batch", "32", "--workers", "2",
                        "--max-iterations", "408", "--data", d])
        self.assertEqual((a.arch, a.batch, a.workers, a.max_iterations, a.data), ("resnet50", 32, 2, 408, d))

    def test_synthetic_needs_no_data(self):
        a = self.parse(["--synthetic-data", "--max_iterations", "10"])
        self.assertTrue(a.synthetic_data)
        self.assertEqual(a.max_iterations, 10)

    def test_errors_name_the_flag(self):
        import train_imagenet
        for argv, flag in ((["--max-iterations", "5"], "--data: required"),
                           (["--data", "/nonexistent/synergy"], "--data: /nonexistent/synergy is not a directory"),
                           (["--synthetic-data", "--batch", "0"], "--batch: must be >= 1"),
                           (["--synthetic-data", "--max-iterations", "-1"], "--max-iterations: must be >= 0")):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with self.assertRaises(SystemExit) as cm, mock.patch("sys.stderr", err):
                    train_imagenet.parse_args(argv)
                self.assertEqual(cm.exception.code, 2)
                self.assertIn(flag, err.getvalue())



class ControlChannelTest(unittest.TestCase):
    """The job's end of the control channel (docs/job-contract.md, "The
    control channel"), no torch: the file reader, the command parser, and
    wrap() over a plain iterable with a fake clock."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.cmd = os.path.join(self.dir.name, "control.jsonl")
        self.ack = os.path.join(self.dir.name, "ack.jsonl")
        self.clock = FakeClock()

    def send(self, text):
        with open(self.cmd, "a") as f:
            f.write(text)

    def acks(self):
        if not os.path.exists(self.ack):
            return []
        with open(self.ack) as f:
            return [json.loads(l) for l in f]

    def test_reads_complete_appended_lines(self):
        ch = synergy_metrics.ControlChannel(self.cmd, self.ack)
        self.assertEqual(ch.lines(), [], "a file not there yet holds nothing")
        self.send('{"seq":1,"workers":4}\n{"seq":2,')
        self.assertEqual(ch.lines(), [b'{"seq":1,"workers":4}'])
        self.assertEqual(ch.lines(), [], "a partial line waits for its newline")
        self.send('"replay":true}\n\n')
        self.assertEqual(ch.lines(), [b'{"seq":2,"replay":true}'])
        self.assertEqual((ch.polls, ch.reads), (4, 2), "read only when the file grew")
        self.send("x" * (synergy_metrics.MAX_CONTROL_LINE + 1))
        with mock.patch("sys.stderr", io.StringIO()) as err:
            self.assertEqual(ch.lines(), [])
        self.assertIn("longer than 4096 bytes", err.getvalue())
        self.send('xx\n{"seq":3}\n')
        self.assertEqual(ch.lines(), [b'{"seq":3}'], "the over-long line is dropped up to its newline")

    def test_poll_costs_a_stat(self):
        # The job looks between every two batches: with nothing new that is
        # one os.stat, no open and no read (counted, not timed: a timing
        # bar belongs in a benchmark, not in a test on a shared host).
        self.send("".join('{"seq":%d,"replay":false}\n' % i for i in range(1, 21)))
        ch = synergy_metrics.ControlChannel(self.cmd, self.ack)
        self.assertEqual(len(ch.commands()), 20)
        stats, opens = [], []
        real_stat, real_open = os.stat, open

        def counted_stat(path, *a, **kw):
            stats.append(path)
            return real_stat(path, *a, **kw)

        def counted_open(path, *a, **kw):
            opens.append(path)
            return real_open(path, *a, **kw)

        with mock.patch("os.stat", counted_stat), mock.patch("builtins.open", counted_open):
            for _ in range(100):
                self.assertEqual(ch.commands(), [])
        self.assertEqual((len(stats), opens), (100, []), "one stat a look, nothing opened")
        self.assertEqual(set(stats), {self.cmd})
        self.assertEqual(ch.reads, 1)

    def test_parse_control(self):
        ok = [('{"seq":1,"workers":4}', {"seq": 1, "workers": 4}), ('{"seq":2,"replay":true}', {"seq": 2, "replay": True}),
              ('{"seq":3,"replay":false,"workers":0}', {"seq": 3, "replay": False, "workers": 0}), ('{"seq":4}', {"seq": 4}),
              ('{"seq":5,"threads":2}', {"seq": 5, "threads": 2})]
        for line, want in ok:
            self.assertEqual(synergy_metrics.parse_control(line), (want, None), line)
        bad = [('{"seq":5,"workers":-1}', 0, "workers -1 is not an integer >= 0"),
               ('{"seq":5,"workers":true}', 0, "workers True is not an integer >= 0"),
               ('{"seq":5,"workers":"2"}', 0, "workers '2' is not an integer >= 0"),
               ('{"seq":5,"replay":1}', 0, "replay 1 is not true or false"),
               ('{"seq":5,"threads":0}', 0, "threads 0 is not an integer >= 1"),
               ('{"seq":5,"threads":1.5}', 0, "threads 1.5 is not an integer >= 1"),
               ('{"seq":5,"cpus":2}', 0, "unknown field cpus"),
               ('{"seq":5,"workers":2}', 5, "seq 5 is not above the last one (5)")]
        for line, last, want in bad:
            cmd, err = synergy_metrics.parse_control(line, last)
            self.assertIsNone(cmd, line)
            self.assertEqual(err["seq"], 5, line)
            self.assertIn(want, err["error"], line)
        for line in ("nope", "[1]", '{"workers":2}', '{"seq":0}', '{"seq":-3}'):
            cmd, err = synergy_metrics.parse_control(line)
            self.assertIsNone(cmd)
            self.assertIsInstance(err, str, "no seq to answer: %s" % line)

    def metrics(self):
        ch = synergy_metrics.ControlChannel(self.cmd, self.ack)
        return SynergyMetrics(os.path.join(self.dir.name, "m.jsonl"), clock=self.clock.perf, wall=self.clock.time,
                              control=ch)

    def test_wrap_plain_iterable_replay_and_workers_error(self):
        seen, t = [], []
        with self.metrics() as m:
            for i, batch in enumerate(m.wrap(SlowLoader(self.clock, [4, 4, 4, 4, 2], wait_s=0.25))):
                seen.append(batch)
                t.append(self.clock.time())
                if i == 1:
                    self.send('{"seq":1,"replay":true}\n{"seq":2,"workers":3}\n')
                if i == 3:
                    self.send('{"seq":3,"replay":false}\n')
                self.clock.advance(0.5)
        # Replay starts with the next batch from the loader (2), 3 is it
        # again, then the loader resumes where it was: 5 batches of its
        # own, 1 replayed; no batch is kept before replay is asked.
        self.assertEqual(len(seen), 6)
        self.assertTrue(seen[3] is seen[2])
        self.assertEqual([len(b) for b in seen], [4, 4, 4, 4, 4, 2])
        acks = self.acks()
        self.assertEqual(acks[0], {"seq": 0, "workers": 0, "ts": t[0], "iter": 0})
        self.assertEqual(acks[1]["seq"], 2)
        self.assertIn("workers 3: the loop iterates a SlowLoader, not a torch DataLoader", acks[1]["error"])
        self.assertEqual(acks[2], {"seq": 1, "workers": 0, "replay": True, "ts": t[2], "iter": 2})
        self.assertEqual(acks[3], {"seq": 3, "workers": 0, "replay": False, "ts": t[4], "iter": 4})
        self.assertEqual(len(acks), 4, "one hello, one answer per command")
        with open(os.path.join(self.dir.name, "m.jsonl")) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([l["iter"] for l in lines], list(range(6)))
        self.assertEqual([l["data_wait_s"] for l in lines], [0.25, 0.25, 0.25, 0, 0.25, 0.25])

    def test_hello_once_over_passes(self):
        with self.metrics() as m:
            for _ in range(3):
                for _ in m.wrap(SlowLoader(self.clock, [2, 2], wait_s=0.1)):
                    pass
        self.assertEqual([a["seq"] for a in self.acks()], [0])

    def test_disabled_helper_does_not_listen(self):
        # Without a metrics file the probe writes the stream, and answers.
        with mock.patch.dict(os.environ, {"SYNERGY_CONTROL_FILE": self.cmd, "SYNERGY_CONTROL_ACK_FILE": self.ack}):
            os.environ.pop("SYNERGY_METRICS_FILE", None)
            m = SynergyMetrics()
            self.assertIsNone(m.control)
            for _ in m.wrap([[1], [2]]):
                pass
        self.assertEqual(self.acks(), [])


HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class ControlWrapTorchTest(unittest.TestCase):
    """wrap() over a real DataLoader: testdata/control_loop.py --helper, with
    the probe injected (it stands down and leaves the channel to the helper)
    and without it."""

    def run_loop(self, d, args, probe):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNERGY_")}
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "SYNERGY_METRICS_FILE": os.path.join(d, "m.jsonl"),
                    "SYNERGY_PROBE_REPORT": os.path.join(d, "r.json")})
        if probe:
            env["PYTHONPATH"] = os.path.join(HERE, "probe")
        if args[-1] != "--no-control":
            env.update({"SYNERGY_CONTROL_FILE": os.path.join(d, "c.jsonl"),
                        "SYNERGY_CONTROL_ACK_FILE": os.path.join(d, "a.jsonl")})
        else:
            args = args[:-1]
        out = os.path.join(d, "out.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, "testdata", "control_loop.py"), out, "--helper"] + args,
                           env=env, cwd=d, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            rec = json.load(f)
        acks = []
        if os.path.exists(os.path.join(d, "a.jsonl")):
            with open(os.path.join(d, "a.jsonl")) as f:
                acks = [json.loads(l) for l in f]
        return rec, acks

    def test_workers_and_replay_mid_pass(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        base = ["--epochs", "2"]
        os.mkdir(os.path.join(tmp.name, "base"))
        ref, acks = self.run_loop(os.path.join(tmp.name, "base"), base + ["--no-control"], probe=False)
        self.assertEqual(acks, [])
        want = [(b["epoch"], b["items"]) for b in ref["batches"]]
        sends = ['3:{"seq":1,"workers":1}', '5:{"seq":2,"replay":true}', '7:{"seq":3,"replay":false,"workers":0}',
                 '9:{"seq":4,"workers":3}', '20:{"seq":5,"workers":1}']
        for probe in (False, True):
            with self.subTest(probe=probe):
                d = os.path.join(tmp.name, "probe" if probe else "alone")
                os.mkdir(d)
                rec, acks = self.run_loop(d, base + sum([["--send", s] for s in sends], []), probe)
                got = [(a["seq"], a["workers"], a.get("replay", False), a["iter"]) for a in acks]
                self.assertEqual(got, [(0, 2, False, 0), (1, 1, False, 4), (2, 1, True, 6), (3, 0, False, 8),
                                       (4, 3, False, 10), (5, 1, False, 21)], "exactly one hello and one answer each")
                b = rec["batches"]
                self.assertEqual(b[7]["items"], b[6]["items"], "batch 6, the first under replay, again")
                seen = [(x["epoch"], x["items"]) for i, x in enumerate(b) if i != 7]
                self.assertEqual(seen, want, "every item once a pass, in the order without commands")
                self.assertEqual([x["children"] for x in b[:12]], [2] * 4 + [1] * 4 + [0] * 2 + [3] * 2)
                with open(os.path.join(d, "m.jsonl")) as f:
                    lines = [json.loads(l) for l in f]
                self.assertEqual([l["iter"] for l in lines], list(range(len(b))))
                if probe:
                    with open(os.path.join(d, "r.json")) as f:
                        self.assertEqual(json.load(f)["stream"], "script")


if __name__ == "__main__":
    unittest.main()
