"""Tests of the injected DataLoader probe (probe/synergy_probe.py).

ProbeLogicTest drives the probe's patches on a stand-in of torch's
dataloader module with a fake clock, so its figures are exact and it needs
no torch. The *TorchTest classes run the test scripts in testdata/ (and the
reference job) unmodified under real torch, with the probe injected the way
`synergy profile` injects it (its directory first on PYTHONPATH), and are
skipped where this interpreter cannot import torch (the Go test turns that
skip into a failure under SYNERGY_REQUIRE=torch).
"""

import hashlib
import io
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_DIR = os.path.join(HERE, "probe")
TESTDATA = os.path.join(HERE, "testdata")
sys.path.insert(0, PROBE_DIR)
import synergy_probe  # noqa: E402
from synergy_probe import Config, ConfigError, Probe  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("torchvision") is not None


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t

    def advance(self, s):
        self.t += s


def fake_dataloader_module(clock, wait_s):
    """A module with torch's DataLoader API surface the probe patches: each
    batch takes wait_s of the fake clock to arrive."""
    import types

    mod = types.ModuleType("fake_dataloader")
    mod.__file__ = os.path.join(tempfile.gettempdir(), "torch", "utils", "data", "dataloader.py")

    class RandomSampler:
        pass

    class SequentialSampler:
        pass

    class _BaseDataLoaderIter:
        def __init__(self, loader):
            self.items = list(range(len(loader.dataset)))
            self.pos, self.bs = 0, loader.batch_size

        def __iter__(self):
            return self

        def __next__(self):
            if self.pos >= len(self.items):
                raise StopIteration
            clock.advance(wait_s)
            b = self.items[self.pos:self.pos + self.bs]
            self.pos += self.bs
            return b

    class DataLoader:
        def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                     collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                     multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False):
            if persistent_workers and num_workers == 0:
                raise ValueError("persistent_workers option needs num_workers > 0")
            self.dataset, self.batch_size, self.num_workers = dataset, batch_size, num_workers
            self.sampler = RandomSampler() if shuffle else SequentialSampler()
            self.persistent_workers = persistent_workers

        def __iter__(self):
            return _BaseDataLoaderIter(self)

    mod.DataLoader, mod._BaseDataLoaderIter = DataLoader, _BaseDataLoaderIter
    return mod


class ConfigTest(unittest.TestCase):
    def test_parse(self):
        c = Config({"SYNERGY_METRICS_FILE": "/m", "SYNERGY_PROBE_MAX_ITERATIONS": "400", "SYNERGY_PROBE_WORKERS": "3",
                    "SYNERGY_PROBE_LOADER": "1", "SYNERGY_PROBE_STEP_S": "0.033"})
        self.assertEqual((c.metrics_file, c.max_iterations, c.workers, c.loader, c.step_s, c.emulate),
                         ("/m", 400, 3, 1, 0.033, True))
        c = Config({})
        self.assertEqual((c.metrics_file, c.report, c.max_iterations, c.workers, c.loader, c.emulate),
                         (None, None, 0, None, None, False))
        c = Config({"SYNERGY_PROBE_EMULATE_GPU": "v100", "SYNERGY_PROBE_MODEL": "resnet18", "SYNERGY_PROBE_WORKERS": "0"})
        self.assertEqual((c.gpu, c.model, c.workers, c.emulate), ("v100", "resnet18", 0, True))

    def test_errors_name_the_variable(self):
        cases = [
            ({"SYNERGY_PROBE_MAX_ITERATIONS": "many"}, "SYNERGY_PROBE_MAX_ITERATIONS: 'many' is not an integer"),
            ({"SYNERGY_PROBE_WORKERS": "-1"}, "SYNERGY_PROBE_WORKERS: -1 must be >= 0"),
            ({"SYNERGY_PROBE_STEP_S": "33ms"}, "SYNERGY_PROBE_STEP_S: '33ms' is not a number of seconds"),
            ({"SYNERGY_PROBE_STEP_S": "0"}, "SYNERGY_PROBE_STEP_S: '0' must be a positive number of seconds"),
            ({"SYNERGY_PROBE_STEP_S": "0.1", "SYNERGY_PROBE_EMULATE_GPU": "v100", "SYNERGY_PROBE_MODEL": "m5"},
             "give one of them, not both"),
            ({"SYNERGY_PROBE_EMULATE_GPU": "v100"}, "SYNERGY_PROBE_MODEL must name the model"),
            ({"SYNERGY_CONTROL_FILE": "/c"}, "SYNERGY_CONTROL_FILE and SYNERGY_CONTROL_ACK_FILE: give both or neither"),
            ({"SYNERGY_PROBE_EMULATE_GPU": "h100", "SYNERGY_PROBE_MODEL": "resnet18"},
             "no measured step time for model 'resnet18' on GPU 'h100'"),
        ]
        for env, want in cases:
            with self.subTest(env=env):
                with self.assertRaises(ConfigError) as cm:  # what install() turns into exit 2
                    Config(env)
                self.assertIn(want, str(cm.exception))

    def test_enabled(self):
        for v, want in (("", True), ("on", True), ("off", False), ("0", False), ("No", False)):
            self.assertEqual(synergy_probe.enabled({"SYNERGY_PROBE": v}), want, v)


class ProbeLogicTest(unittest.TestCase):
    """The probe's patches on a stand-in dataloader module, fake clock."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.metrics = os.path.join(self.dir.name, "m.jsonl")
        self.report = os.path.join(self.dir.name, "r.json")
        self.clock = FakeClock()

    def probe(self, wait_s=0.25, **env):
        e = {"SYNERGY_METRICS_FILE": self.metrics, "SYNERGY_PROBE_REPORT": self.report}
        e.update({k: str(v) for k, v in env.items()})
        p = Probe(Config(e), clock=self.clock, env=e)
        mod = fake_dataloader_module(self.clock, wait_s)
        p.patch(mod)
        self.addCleanup(lambda: p.metrics and p.metrics.close())
        return p, mod

    def lines(self):
        if not os.path.exists(self.metrics):
            return []
        with open(self.metrics) as f:
            return [json.loads(l) for l in f]

    def test_times_wait_and_step_of_the_shuffled_loader(self):
        p, mod = self.probe(wait_s=0.25)
        val = mod.DataLoader(list(range(6)), batch_size=4)  # built first, not shuffled
        train = mod.DataLoader(list(range(10)), 4, True, num_workers=2)
        for _ in val:  # iterated first: still not the primary, a shuffled loader exists
            self.clock.advance(1.0)
        for epoch in range(2):
            for _ in train:
                self.clock.advance(0.5)  # the step
            for _ in val:
                self.clock.advance(7.0)  # evaluation between epochs is no training step
        p.at_exit()
        got = self.lines()
        # 10 samples in batches of 4: 4, 4, 2, per epoch; each line's step is
        # the time between handing the batch over and the next request.
        self.assertEqual([l["samples"] for l in got], [4, 4, 2, 4, 4, 2])
        self.assertEqual([l["epoch"] for l in got], [0, 0, 0, 1, 1, 1])
        self.assertEqual([l["iter"] for l in got], list(range(6)))
        for l in got:
            self.assertAlmostEqual(l["data_wait_s"], 0.25)
            self.assertAlmostEqual(l["step_s"], 0.5)
            self.assertNotIn("emulated", l)
        with open(self.report) as f:
            r = json.load(f)
        self.assertEqual((r["state"], r["stream"], r["primary"], r["iterations"]), ("exited", "probe", 1, 6))
        v, t = r["loaders"]
        self.assertEqual((v["batches"], v["samples"], v["passes"], v["shuffle"], v["primary"]), (6, 18, 3, False, False))
        self.assertEqual((t["batches"], t["samples"], t["passes"], t["shuffle"], t["primary"]), (6, 20, 2, True, True))
        self.assertAlmostEqual(t["data_wait_s"], 1.5)
        self.assertTrue(v["site"].endswith("test_probe.py:%d" % (self._line_of("val = mod.DataLoader"))), v["site"])

    def _line_of(self, text):
        with open(__file__) as f:
            for i, l in enumerate(f, 1):
                if text in l:
                    return i
        raise AssertionError(text)

    def test_loader_by_index(self):
        p, mod = self.probe(SYNERGY_PROBE_LOADER=0)
        a = mod.DataLoader(list(range(3)), batch_size=1)
        b = mod.DataLoader(list(range(5)), 1, True)
        for _ in b:
            pass
        for _ in a:
            pass
        p.at_exit()
        self.assertEqual(len(self.lines()), 3, "the loader named by SYNERGY_PROBE_LOADER, not the shuffled one")

    def test_cap_exits_cleanly(self):
        p, mod = self.probe(SYNERGY_PROBE_MAX_ITERATIONS=3)
        seen = 0
        with self.assertRaises(SystemExit) as cm:
            for _ in mod.DataLoader(list(range(40)), 2, True):
                seen += 1
        self.assertEqual(cm.exception.code, 0)
        self.assertEqual(seen, 3, "the 4th batch is never handed over")
        self.assertEqual(len(self.lines()), 3)
        with open(self.report) as f:
            r = json.load(f)
        self.assertEqual((r["state"], r["iterations"]), ("capped", 3))

    def test_workers_override(self):
        p, mod = self.probe(SYNERGY_PROBE_WORKERS=0)
        a = mod.DataLoader(list(range(4)), 2, True, None, None, 3, persistent_workers=True)
        b = mod.DataLoader(list(range(4)), batch_size=2, num_workers=0)
        c = mod.DataLoader(list(range(4)))
        self.assertEqual((a.num_workers, a.persistent_workers), (0, False), "persistent_workers dropped with 0 workers")
        self.assertEqual((b.num_workers, c.num_workers), (0, 0))
        r = [x.as_dict() for x in p.loaders]
        self.assertEqual([(x["num_workers_asked"], x["num_workers"]) for x in r], [(3, 0), (0, 0), (0, 0)])
        self.assertIn("SYNERGY_PROBE_WORKERS=0 (the script asked for 3)", r[0]["workers_note"])
        self.assertIn("kept 0", r[1]["workers_note"])
        p2, mod2 = self.probe(SYNERGY_PROBE_WORKERS=5)
        d = mod2.DataLoader(list(range(4)), 2, False, None, None, 1, None, False, True)
        self.assertEqual((d.num_workers, d.batch_size), (5, 2), "positional arguments after num_workers kept")

    def test_loader_only_mode(self):
        p, mod = self.probe(wait_s=0.1, SYNERGY_PROBE_STEP_S=0.02, SYNERGY_PROBE_MAX_ITERATIONS=7)
        slept = []

        class Step:
            step_s, source, label = 0.02, "fixed", "fixed 20.0 ms"

            def wait(s):
                slept.append(s.step_s)
                self.clock.advance(0.03)  # an overshoot

        helper = synergy_probe._helper()
        orig = helper.fixed_step
        helper.fixed_step = lambda s: Step()  # the fake clock's wait
        self.addCleanup(setattr, helper, "fixed_step", orig)
        loop_bodies = 0
        with self.assertRaises(SystemExit):
            for _ in mod.DataLoader(list(range(6)), 2, True):  # 3 batches per pass
                loop_bodies += 1
        self.assertEqual(loop_bodies, 0, "the script's loop body never runs")
        self.assertEqual(len(slept), 7)
        got = self.lines()
        self.assertEqual(len(got), 7)
        self.assertEqual([l["epoch"] for l in got], [0, 0, 0, 1, 1, 1, 2])
        for l in got:
            self.assertEqual((l["emulated"], l["step_source"], l["step_intended_s"]), (True, "fixed 20.0 ms", 0.02))
            self.assertAlmostEqual(l["step_s"], 0.03)
            self.assertAlmostEqual(l["data_wait_s"], 0.1)

    def test_replay_mode_times_the_step_alone(self):
        p, mod = self.probe(wait_s=0.25, SYNERGY_PROBE_REPLAY=1, SYNERGY_PROBE_MAX_ITERATIONS=7)
        seen = []
        with self.assertRaises(SystemExit):
            for batch in mod.DataLoader(list(range(6)), 2, True):  # 3 batches a pass: replay never ends a pass
                seen.append(batch)
                self.clock.advance(0.5)  # the script's own step
        self.assertEqual(len(seen), 7)
        self.assertTrue(all(b is seen[0] for b in seen), "every batch is the first one again")
        got = self.lines()
        self.assertEqual(len(got), 7)
        self.assertAlmostEqual(got[0]["data_wait_s"], 0.25, msg="the first batch came from the loader")
        for l in got[1:]:
            self.assertAlmostEqual(l["data_wait_s"], 0.0, msg="a replayed batch waits for nothing")
        for l in got:
            self.assertAlmostEqual(l["step_s"], 0.5)
            self.assertEqual(l["epoch"], 0)
        with open(self.report) as f:
            r = json.load(f)
        self.assertTrue(r["config"]["replay"])
        self.assertTrue(any("replay mode" in n for n in r["notes"]), r["notes"])

    def test_replay_and_loader_only_exclude_each_other(self):
        with self.assertRaises(synergy_probe.ConfigError) as cm:
            Config({"SYNERGY_PROBE_REPLAY": "1", "SYNERGY_PROBE_STEP_S": "0.02"})
        self.assertIn("SYNERGY_PROBE_REPLAY", str(cm.exception))
        with self.assertRaises(synergy_probe.ConfigError):
            Config({"SYNERGY_PROBE_REPLAY": "maybe"})

    def test_stands_down_when_the_script_writes(self):
        p, mod = self.probe(SYNERGY_PROBE_MAX_ITERATIONS=2)
        with open(self.metrics, "w") as f:
            f.write('{"iter":0,"samples":2,"data_wait_s":0,"step_s":0,"ts":1}\n')
        n = 0
        for _ in mod.DataLoader(list(range(10)), 2, True):
            n += 1
        p.at_exit()
        self.assertEqual(n, 5, "no cap once the script writes the stream")
        self.assertEqual(len(self.lines()), 1, "the probe wrote no line")
        with open(self.report) as f:
            r = json.load(f)
        self.assertEqual(r["stream"], "script")


def run_probed(argv, env=None, cwd=None, timeout=300):
    """Run argv with the probe injected as synergy profile does."""
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("SYNERGY_"):
            del e[k]
    e.update({"PYTHONPATH": PROBE_DIR, "PYTHONDONTWRITEBYTECODE": "1"})
    e.update(env or {})
    return subprocess.run(argv, env=e, cwd=cwd, capture_output=True, text=True, timeout=timeout)


class ProbeStartupTest(unittest.TestCase):
    """Start-up behaviour, torch not needed."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.report = os.path.join(self.dir.name, "r.json")

    def test_bad_setting_stops_the_job(self):
        p = run_probed([sys.executable, "-c", "print('ran')"], {"SYNERGY_PROBE_MAX_ITERATIONS": "many",
                                                                "SYNERGY_PROBE_REPORT": self.report})
        self.assertEqual(p.returncode, synergy_probe.EXIT_CONFIG, p.stderr)
        self.assertNotIn("ran", p.stdout)
        self.assertIn("synergy-probe: SYNERGY_PROBE_MAX_ITERATIONS: 'many' is not an integer", p.stderr)
        with open(self.report) as f:
            self.assertEqual(json.load(f)["state"], "error")

    def test_unknown_gpu_model_pair_stops_the_job(self):
        p = run_probed([sys.executable, "-c", "print('ran')"], {"SYNERGY_PROBE_EMULATE_GPU": "v100",
                                                                "SYNERGY_PROBE_MODEL": "nosuchmodel",
                                                                "SYNERGY_PROBE_REPORT": self.report})
        self.assertEqual(p.returncode, synergy_probe.EXIT_CONFIG, p.stderr)
        self.assertNotIn("ran", p.stdout)
        self.assertIn("no measured step time for model 'nosuchmodel'", p.stderr)
        with open(self.report) as f:
            self.assertEqual(json.load(f)["state"], "error")

    def test_chains_to_the_shadowed_sitecustomize(self):
        other = os.path.join(self.dir.name, "other")
        os.mkdir(other)
        marker = os.path.join(self.dir.name, "marker")
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("open(%r, 'w').write('chained')\n" % marker)
        p = run_probed([sys.executable, "-c", "import sys; print('synergy_probe' in sys.modules)"],
                       {"PYTHONPATH": PROBE_DIR + os.pathsep + other, "SYNERGY_PROBE_REPORT": self.report})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "True")
        with open(marker) as f:
            self.assertEqual(f.read(), "chained")
        with open(self.report) as f:
            r = json.load(f)
        self.assertEqual((r["state"], r["fallback"], r["torch_imported"]), ("exited", "wall_clock", False))
        self.assertIn("never imported torch's DataLoader", " ".join(r["notes"]))

    def test_off(self):
        p = run_probed([sys.executable, "-c", "import sys; print('synergy_probe' in sys.modules)"],
                       {"SYNERGY_PROBE": "off", "SYNERGY_PROBE_REPORT": self.report, "SYNERGY_PROBE_WORKERS": "bad"})
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "False"), p.stderr)
        self.assertFalse(os.path.exists(self.report))


@unittest.skipUnless(HAVE_TORCH, "torch and torchvision are not importable by %s" % sys.executable)
class ProbeTorchTest(unittest.TestCase):
    """Unmodified scripts under real torch with the probe injected."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.images = os.path.join(cls.tmp.name, "img")
        import gen_data
        gen_data.generate(gen_data.parse_args(["image", "--dir", cls.images, "--bytes", "240KiB", "--size", "64x48",
                                               "-q"]), out=io.StringIO())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.metrics = os.path.join(self.dir.name, "m.jsonl")
        self.report = os.path.join(self.dir.name, "r.json")
        self.env = {"SYNERGY_METRICS_FILE": self.metrics, "SYNERGY_PROBE_REPORT": self.report}

    def run_script(self, argv, **env):
        e = dict(self.env)
        e.update({k: str(v) for k, v in env.items()})
        return run_probed([sys.executable] + argv, e, cwd=self.dir.name)

    def lines(self):
        if not os.path.exists(self.metrics):
            return []
        with open(self.metrics) as f:
            return [json.loads(l) for l in f]

    def read_report(self):
        with open(self.report) as f:
            return json.load(f)

    def script_state(self):
        """The test scripts' files: content hashes and the directory listing."""
        out = {}
        for n in sorted(os.listdir(TESTDATA)):
            p = os.path.join(TESTDATA, n)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    out[n] = hashlib.sha256(f.read()).hexdigest()
        return out

    def test_imagenet_ref_loader_only(self):
        before = self.script_state()
        ref = os.path.join(TESTDATA, "imagenet_ref.py")
        p = self.run_script([ref, self.images, "-j", "1", "-b", "4", "--epochs", "1", "-p", "1"],
                            SYNERGY_PROBE_MAX_ITERATIONS=12, SYNERGY_PROBE_EMULATE_GPU="v100",
                            SYNERGY_PROBE_MODEL="resnet18")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("Epoch:", p.stdout, "the model ran")
        self.assertIn("synergy-probe: stopped after 12 iterations", p.stderr)
        got = self.lines()
        self.assertEqual(len(got), 12)
        label = "gpemu v100 resnet18 batch 256: 264.2 ms, scaled to batch 4"
        for l in got:
            self.assertEqual((l["samples"], l["emulated"], l["step_source"]), (4, True, label))
            self.assertAlmostEqual(l["step_intended_s"], 0.2642 * 4 / 256)
            self.assertGreaterEqual(l["step_s"], l["step_intended_s"])
        r = self.read_report()
        self.assertEqual((r["state"], r["stream"], r["primary"], r["emulated"]["label"]), ("capped", "probe", 0, label))
        self.assertEqual(len(r["loaders"]), 1)
        self.assertTrue(r["loaders"][0]["site"].startswith(ref + ":"), r["loaders"][0]["site"])
        self.assertEqual(self.script_state(), before, "the script's files changed")

    def test_imagenet_ref_real_step(self):
        p = self.run_script([os.path.join(TESTDATA, "imagenet_ref.py"), self.images, "-j", "1", "-b", "2",
                             "--epochs", "1", "-p", "1", "-a", "resnet18"], SYNERGY_PROBE_MAX_ITERATIONS=3)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.count("Epoch: [0]"), 3, p.stdout)
        got = self.lines()
        self.assertEqual([(l["iter"], l["samples"]) for l in got], [(0, 2), (1, 2), (2, 2)])
        self.assertTrue(all("emulated" not in l for l in got))
        self.assertEqual(self.read_report()["state"], "capped")

    def test_imagenet_ref_replay_times_the_real_step_alone(self):
        # The unmodified ImageNet script, its loader asked for one batch
        # only: the model trains on it again and again (the step-only run).
        p = self.run_script([os.path.join(TESTDATA, "imagenet_ref.py"), self.images, "-j", "1", "-b", "2",
                             "--epochs", "1", "-p", "1", "-a", "resnet18"],
                            SYNERGY_PROBE_MAX_ITERATIONS=6, SYNERGY_PROBE_REPLAY=1)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("replay mode", p.stderr)
        self.assertEqual(p.stdout.count("Epoch: [0]"), 6, "the model ran each replayed batch")
        got = self.lines()
        self.assertEqual(len(got), 6)
        # The replayed batches waited for nothing: the typical one (the
        # median, so that one preempted iteration does not decide it).
        waits = sorted(l["data_wait_s"] for l in got[1:])
        self.assertLess(waits[len(waits) // 2], 0.01, "replayed batches' data waits: %s" % waits)
        r = self.read_report()
        self.assertEqual((r["state"], r["stream"]), ("capped", "probe"))
        self.assertEqual(r["loaders"][0]["batches"], 6)

    def test_two_loaders_reports_and_worker_override(self):
        out = os.path.join(self.dir.name, "seen.json")
        p = self.run_script([os.path.join(TESTDATA, "two_loaders.py"), out, "--epochs", "2", "--workers", "1"],
                            SYNERGY_PROBE_WORKERS=2)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            seen = json.load(f)
        r = self.read_report()
        ev, tr = r["loaders"]
        # What the script got is what the probe counted, loader by loader.
        for rec, name in ((ev, "eval"), (tr, "train")):
            self.assertEqual((rec["batches"], rec["samples"]), (seen[name]["batches"], seen[name]["samples"]), name)
        self.assertEqual((ev["num_workers_asked"], ev["num_workers"], ev["primary"], ev["passes"]), (0, 0, False, 3))
        self.assertIn("kept 0", ev["workers_note"])
        self.assertEqual((tr["num_workers_asked"], tr["num_workers"], tr["primary"], tr["passes"]), (1, 2, True, 2))
        # The workers themselves saw the override: ids 0 and 1 of 2.
        self.assertEqual(sorted(map(tuple, seen["train"]["workers"])), [(0, 2), (1, 2)])
        self.assertEqual(seen["eval"]["workers"], [[-1, 0]])
        got = self.lines()
        self.assertEqual(len(got), seen["train"]["batches"])
        self.assertEqual(sum(l["samples"] for l in got), seen["train"]["samples"])
        self.assertEqual([l["epoch"] for l in got], [0] * 5 + [1] * 5)
        self.assertEqual((r["state"], r["stream"], r["primary"]), ("exited", "probe", 1))

    def test_two_loaders_spawned_workers_leave_the_report(self):
        out = os.path.join(self.dir.name, "seen.json")
        p = self.run_script([os.path.join(TESTDATA, "two_loaders.py"), out, "--epochs", "1", "--workers", "1",
                             "--context", "spawn"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            seen = json.load(f)
        r = self.read_report()
        # A spawned worker runs sitecustomize too; the report stays the script's.
        self.assertEqual((r["pid"], r["state"], len(r["loaders"])), (seen["pid"], "exited", 2))
        self.assertEqual(r["loaders"][1]["batches"], seen["train"]["batches"])
        self.assertEqual(sorted(map(tuple, seen["train"]["workers"])), [(0, 1)])

    def test_cap(self):
        out = os.path.join(self.dir.name, "seen.json")
        p = self.run_script([os.path.join(TESTDATA, "two_loaders.py"), out], SYNERGY_PROBE_MAX_ITERATIONS=4)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("synergy-probe: stopped after 4 iterations (SYNERGY_PROBE_MAX_ITERATIONS)", p.stderr)
        self.assertFalse(os.path.exists(out), "the script ran on past the cap")
        self.assertEqual([l["iter"] for l in self.lines()], [0, 1, 2, 3])
        r = self.read_report()
        self.assertEqual((r["state"], r["iterations"]), ("capped", 4))
        # The measured loader's pass length is its own len(): the profiler
        # needs no guess from files and batch.
        train = [l for l in r["loaders"] if l["primary"]][0]
        self.assertEqual(train["len"], 5, train)  # 40 items, batch 8

    def test_no_loader(self):
        p = self.run_script([os.path.join(TESTDATA, "no_loader.py"), "5"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no torch.utils.data.DataLoader was iterated", p.stderr)
        self.assertFalse(os.path.exists(self.metrics))
        r = self.read_report()
        self.assertEqual((r["state"], r["stream"], r["fallback"], r["loaders"], r["torch_imported"]),
                         ("exited", "none", "wall_clock", [], True))

    def test_crash_ends_with_the_scripts_error(self):
        # Issue 44: the script's traceback is the last thing it wrote, not
        # the probe's note; the report names the error.
        p = self.run_script([os.path.join(TESTDATA, "crash_early.py")])
        self.assertEqual(p.returncode, 1, p.stderr)
        last = p.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("AttributeError:") and "not_a_method" in last, p.stderr)
        self.assertIn("Traceback (most recent call last):", p.stderr)
        r = self.read_report()
        self.assertTrue(any(n.startswith("the script failed: AttributeError:") for n in r["notes"]), r["notes"])

    def test_script_that_writes_the_stream_is_left_alone(self):
        p = self.run_script([os.path.join(HERE, "train_imagenet.py"), "--data", self.images, "-b", "4", "-j", "1",
                             "--emulate-step", "0.002", "--max-iterations", "6", "--print-freq", "0"],
                            SYNERGY_PROBE_MAX_ITERATIONS=3, SYNERGY_PROBE_STEP_S=0.5)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = self.lines()
        self.assertEqual([l["iter"] for l in got], list(range(6)), "one line per iteration, from the script only")
        self.assertTrue(all(l["step_source"] == "fixed 2.0 ms" for l in got))
        r = self.read_report()
        self.assertEqual((r["stream"], r["primary"], r["loaders"][0]["batches"]), ("script", None, 6))



def dedup(batches):
    """(epoch, items) of each batch, a batch replayed right after itself
    counted once (the items are distinct, so only a replay repeats)."""
    out = []
    for b in batches:
        if out and b["items"] == out[-1][1]:
            continue
        out.append((b["epoch"], b["items"]))
    return out


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f]


@unittest.skipUnless(HAVE_TORCH, "torch and torchvision are not importable by %s" % sys.executable)
class ControlTorchTest(unittest.TestCase):
    """The control channel under real torch: testdata/control_loop.py (a
    shuffled, seeded DataLoader over known items) sends itself commands
    mid-pass; the probe (or, with --helper, synergy_metrics.wrap) applies
    them. What the loop saw is compared with a run without commands."""

    _baselines = {}

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.n = 0

    def run_loop(self, *args, probe=True, control=True, env=None):
        """Run control_loop.py; returns (its record, the answers, the stream, the report, stderr)."""
        self.n += 1
        d = os.path.join(self.dir.name, str(self.n))
        os.mkdir(d)
        e = {"SYNERGY_METRICS_FILE": os.path.join(d, "m.jsonl"), "SYNERGY_PROBE_REPORT": os.path.join(d, "r.json")}
        if control:
            e.update({"SYNERGY_CONTROL_FILE": os.path.join(d, "c.jsonl"),
                      "SYNERGY_CONTROL_ACK_FILE": os.path.join(d, "a.jsonl")})
        if not probe:
            e["SYNERGY_PROBE"] = "off"
        e.update(env or {})
        out = os.path.join(d, "out.json")
        p = run_probed([sys.executable, os.path.join(TESTDATA, "control_loop.py"), out] + list(args), e, cwd=d)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            rec = json.load(f)
        report = None
        if os.path.exists(e["SYNERGY_PROBE_REPORT"]):
            with open(e["SYNERGY_PROBE_REPORT"]) as f:
                report = json.load(f)
        return rec, read_jsonl(os.path.join(d, "a.jsonl")), read_jsonl(e["SYNERGY_METRICS_FILE"]), report, p.stderr

    def baseline(self, *args):
        """The batches a run without commands saw (once per arguments)."""
        if args not in self._baselines:
            rec, acks, _, _, _ = self.run_loop(*args, control=False)
            self.assertEqual(acks, [])
            self._baselines[args] = dedup(rec["batches"])
        return self._baselines[args]

    def check_acks(self, acks, want):
        """want: (seq, workers, replay, iter) per answer, or (seq, "error text")."""
        got = []
        for a in acks:
            if "error" in a:
                got.append((a["seq"], a["error"]))
            else:
                got.append((a["seq"], a["workers"], a.get("replay", False), a["iter"]))
        self.assertEqual(got, want)
        ts = [a["ts"] for a in acks if "ts" in a]
        self.assertEqual(ts, sorted(ts), "answers' ts go back")

    def test_probe_workers_and_replay_mid_pass(self):
        # 60 items in batches of 4: 15 batches a pass, 2 passes. Commands go
        # in the body of batch K, so the first batch under them is K+1.
        args = ("--epochs", "2")
        sends = ['3:{"seq":1,"workers":1}', '6:{"seq":2,"workers":3}', '8:{"seq":3,"replay":true}',
                 '11:{"seq":4,"replay":false,"workers":0}', '13:{"seq":5,"workers":2}',
                 '13:{"seq":6,"workers":-1}', '13:not json', '13:{"seq":6,"bogus":1}', '13:{"seq":5,"workers":1}']
        rec, acks, lines, report, stderr = self.run_loop(*args, *sum([["--send", s] for s in sends], []))
        self.check_acks(acks, [
            (0, 2, False, 0),  # the hello, at the first batch
            (1, 1, False, 4), (2, 3, False, 7), (3, 3, True, 9), (4, 0, False, 12),
            (6, "workers -1 is not an integer >= 0"),
            (6, "seq 6 is not above the last one (6)"),  # answered as it is read, before seq 5's batch
            (5, "seq 5 is not above the last one (6)"),
            (5, 2, False, 14),
        ])
        self.assertIn("control line 'not json'", stderr)
        b = rec["batches"]
        # Every item of each pass once, in the order of the run without commands.
        self.assertEqual(dedup(b), self.baseline(*args))
        # Replay keeps no batch before it is asked: the first batch under
        # it (9, from the loader) is handed out again at 10 and 11.
        self.assertEqual(len(b), 30 + 2, "batch 9 handed out 2 more times in replay")
        self.assertTrue(all(b[i]["items"] == b[9]["items"] for i in (10, 11)))
        # The worker processes changed: 2, then 1 from batch 4, 3 from 7
        # (the replayed batches came from no worker), none from 12, 2 from 14.
        self.assertEqual([x["children"] for x in b[:17]], [2] * 4 + [1] * 3 + [3] * 5 + [0] * 2 + [2] * 3)
        self.assertEqual([x["wids"] for x in b[12:14]], [[-1], [-1]], "in-process after workers 0")
        self.assertEqual(set(x["children"] for x in b[15:]), {2}, "the next pass keeps the new count")
        self.assertEqual(rec["loader_workers"], 2)
        # The stream goes on: one line per batch the loop saw, iter as acked.
        self.assertEqual([l["iter"] for l in lines], list(range(len(b))))
        self.assertEqual([l["epoch"] for l in lines], [x["epoch"] for x in b])
        # Batches 10 and 11 were handed out again from memory (9 came from
        # the loader): they waited for nothing. The lower of the two, so
        # that one iteration preempted on a busy host does not decide it.
        waits = [l["data_wait_s"] for l in lines[10:12]]
        self.assertLess(min(waits), 0.01, "replayed batches' data waits: %s" % waits)
        self.assertEqual((report["stream"], report["loaders"][0]["num_workers"], report["loaders"][0]["workers_changes"]),
                         ("probe", 2, 4))

    def test_probe_threads_up_and_down(self):
        # A launch at 1 core moved to 2 and back: the job's intra-op threads
        # and thread variables follow, as a fresh launch's would; every
        # answer (and the hello) says the threads in force.
        rec, acks, _, _, _ = self.run_loop("--epochs", "1", "--send", '3:{"seq":1,"threads":2,"workers":3}', "--send",
                                           '6:{"seq":2,"threads":1}', "--send", '8:{"seq":3,"threads":0}',
                                           env={"OMP_NUM_THREADS": "1"})
        self.check_acks(acks, [(0, 2, False, 0), (1, 3, False, 4), (2, 3, False, 7), (3, "threads 0 is not an integer >= 1")])
        self.assertEqual([a.get("threads") for a in acks[:3]], [1, 2, 1])
        b = rec["batches"]
        self.assertEqual([x["threads"] for x in b[:10]], [1] * 4 + [2] * 3 + [1] * 3)
        self.assertEqual([x["omp"] for x in b[:10]], ["1"] * 4 + ["2"] * 3 + ["1"] * 3)

    def test_probe_persistent_workers(self):
        args = ("--epochs", "3", "--persistent")
        rec, acks, _, _, _ = self.run_loop(*args, "--send", '3:{"seq":1,"workers":1}', "--send",
                                           '20:{"seq":2,"workers":3}')
        self.check_acks(acks, [(0, 2, False, 0), (1, 1, False, 4), (2, 3, False, 21)])
        self.assertEqual(dedup(rec["batches"]), self.baseline(*args),
                         "the next passes' order is the one without commands (the shuffle's generator untouched)")
        self.assertEqual([x["children"] for x in rec["batches"]], [2] * 4 + [1] * 17 + [3] * 24)

    def test_probe_workers_that_fail_go_back(self):
        # A dataset that refuses to load in a worker: 0 -> 2 fails at the
        # first batch, the job goes back in-process and loses no batch.
        args = ("--workers", "0", "--epochs", "1", "--no-fork")
        rec, acks, _, _, _ = self.run_loop(*args, "--send", '2:{"seq":1,"workers":2}', "--send",
                                           '5:{"seq":2,"replay":true}', "--send", '6:{"seq":3,"replay":false}')
        self.assertEqual([a["seq"] for a in acks], [0, 1, 2, 3])
        self.assertIn("workers 2: the loader failed before its first batch (RuntimeError:", acks[1]["error"])
        self.assertIn("back to 0 workers", acks[1]["error"])
        self.assertEqual((acks[2]["workers"], acks[2]["iter"], acks[3]["iter"]), (0, 6, 7))
        self.assertEqual(dedup(rec["batches"]), self.baseline(*args))
        self.assertEqual(set(x["children"] for x in rec["batches"]), {0})

    def test_probe_iterable_dataset_begins_again(self):
        rec, acks, _, _, _ = self.run_loop("--iterable", "--epochs", "1", "--items", "24", "--send",
                                           '2:{"seq":1,"workers":1}')
        self.check_acks(acks, [(0, 2, False, 0), (1, 1, False, 3)])
        self.assertIn("iterable dataset: its pass began again with 1 workers", acks[1]["note"])
        items = [i for x in rec["batches"][3:] for i in x["items"]]
        self.assertEqual(items, list(range(24)), "the pass from its start, one worker")

    def test_no_channel_no_answers(self):
        rec, acks, lines, report, _ = self.run_loop("--epochs", "1", control=False)
        self.assertEqual((acks, len(lines), report["stream"]), ([], 15, "probe"))
        self.assertIsNone(report["config"]["control_file"])

    def test_loader_only_mode_takes_commands(self):
        # The probe drives the loader itself (emulated step): the profiler
        # sends commands from outside, as it will.
        d = os.path.join(self.dir.name, "lo")
        os.mkdir(d)
        cmd, ack, out = os.path.join(d, "c.jsonl"), os.path.join(d, "a.jsonl"), os.path.join(d, "out.json")
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("SYNERGY_"):
                del env[k]
        env.update({"PYTHONPATH": PROBE_DIR, "PYTHONDONTWRITEBYTECODE": "1", "SYNERGY_PROBE_STEP_S": "0.01",
                    "SYNERGY_METRICS_FILE": os.path.join(d, "m.jsonl"), "SYNERGY_CONTROL_FILE": cmd,
                    "SYNERGY_CONTROL_ACK_FILE": ack, "SYNERGY_PROBE_REPORT": os.path.join(d, "r.json")})
        p = subprocess.Popen([sys.executable, os.path.join(TESTDATA, "control_loop.py"), out, "--epochs", "1000"],
                             env=env, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))

        def answer(seq, timeout=60):
            deadline = time.time() + timeout
            while time.time() < deadline:
                for a in read_jsonl(ack):
                    if a["seq"] == seq:
                        return a
                self.assertIsNone(p.poll(), "the job ended")
                time.sleep(0.02)
            self.fail("no answer to seq %d" % seq)

        def children():
            out = set()
            for t in os.listdir("/proc/%d/task" % p.pid):
                with open("/proc/%d/task/%s/children" % (p.pid, t)) as f:
                    out.update(f.read().split())
            return len(out)

        hello = answer(0)
        self.assertEqual((hello["workers"], hello["iter"]), (2, 0))
        last = hello
        for seq, c in enumerate([{"workers": 1}, {"workers": 3}, {"replay": True}, {"replay": False, "workers": 2}], 1):
            c["seq"] = seq
            with open(cmd, "a") as f:
                f.write(json.dumps(c) + "\n")
            a = answer(seq)
            self.assertNotIn("error", a)
            self.assertEqual(a["workers"], c.get("workers", last["workers"]))
            self.assertEqual(a["replay"], seq == 3)
            self.assertGreater(a["iter"], last["iter"])
            self.assertGreater(a["ts"], last["ts"])
            if "workers" in c:
                self.assertEqual(children(), c["workers"], "worker processes after workers %d" % c["workers"])
            if c.get("replay"):
                time.sleep(0.3)  # a dozen replayed 20 ms steps before the next command
            last = a
        time.sleep(0.3)
        p.kill()
        p.wait()
        lines = read_jsonl(os.path.join(d, "m.jsonl"))
        self.assertGreater(len(lines), last["iter"])
        self.assertEqual([l["iter"] for l in lines], list(range(len(lines))))
        self.assertTrue(all(l["emulated"] for l in lines))
        # Replayed batches (from seq 3's iter to seq 4's) waited for nothing:
        # the typical one under 5 ms (the median, so that one iteration
        # preempted on a busy host does not decide it).
        a3, a4 = read_jsonl(ack)[3:5]
        waits = sorted(l["data_wait_s"] for l in lines[a3["iter"]:a4["iter"]])
        self.assertGreater(len(waits), 5, "replayed iterations")
        self.assertLess(waits[len(waits) // 2], 0.005, "replayed iterations' data waits: %s" % waits)


if __name__ == "__main__":
    unittest.main()
