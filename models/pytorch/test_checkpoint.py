"""Tests of checkpoint and resume (synergy_metrics.Checkpointer, the
reference jobs): real processes stopped mid-pass by real signals and
started again must, joined, train exactly the iterations, batches and
weights of one uninterrupted run. The torch tests skip where this
interpreter cannot import torch (the Go test turns that skip into a failure
under SYNERGY_REQUIRE=torch).
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_REFERENCE = HAVE_TORCH and all(importlib.util.find_spec(m) is not None
                                    for m in ("numpy", "PIL", "torchvision", "torchaudio"))

import synergy_metrics as sm  # noqa: E402


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNERGY_", "SLURM_"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def read_lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f]


def stop_after(p, path, n, sig, timeout=240):
    """Wait until path holds n lines, then send sig to p; return p's exit status."""
    deadline = time.monotonic() + timeout
    while count_lines(path) < n:
        if p.poll() is not None:
            raise AssertionError("the job exited (%s) after %d lines, before %d:\n%s" % (
                p.returncode, count_lines(path), n, p.stderr.read()))
        if time.monotonic() > deadline:
            p.kill()
            raise AssertionError("no %d lines in %ds" % (n, timeout))
        time.sleep(0.01)
    p.send_signal(sig)
    p.wait(timeout=timeout)
    return p.returncode


class CheckpointerTest(unittest.TestCase):
    """The helper alone: no torch, no signals."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.join(self.tmp.name, "ck")

    def test_environment(self):
        self.assertEqual(sm.checkpoint_dir({}), "")
        self.assertEqual(sm.checkpoint_dir({"SYNERGY_CHECKPOINT_DIR": "/x"}), "/x")
        self.assertEqual(sm.checkpoint_dir({"SLURM_JOB_ID": "7", "SLURM_SUBMIT_DIR": "/h"}), "/h/synergy-checkpoints/7")
        self.assertEqual(sm.slurm_job_id({"SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": "1"}), "8_1")
        self.assertEqual(sm.slurm_job_id({"SLURM_JOB_ID": "9;x"}), "")
        self.assertEqual(sm.requeue_mode({}), "none")
        self.assertEqual(sm.requeue_mode({"SLURM_JOB_ID": "3"}), "requeue")
        for bad in ({"SYNERGY_REQUEUE": "hold"}, {"SLURM_JOB_ID": "3", "SYNERGY_REQUEUE": "later"}):
            with self.assertRaises(ValueError) as cm:
                sm.requeue_mode(bad)
            self.assertIn("SYNERGY_REQUEUE", str(cm.exception))

    def test_save_resume_skip_and_requeue(self):
        calls = []
        env = {"SLURM_JOB_ID": "41", "SYNERGY_REQUEUE": "hold"}
        ck = sm.Checkpointer(self.dir, signals=False, env=env, run=lambda argv: calls.append(argv) or "")
        self.assertFalse(ck.resumed)
        for _ in range(5):  # epoch 0 of 3 batches, then 2 of epoch 1
            ck.step_done(samples=4)
            if ck.batch == 3:
                ck.end_epoch()
        ck.stop_signal, ck._requeue = "SIGUSR1", True
        with self.assertRaises(SystemExit) as cm:
            ck.step_done(6, samples=4)
        self.assertEqual(cm.exception.code, sm.EXIT_PREEMPTED)
        self.assertEqual(calls, [["scontrol", "requeuehold", "41"]])
        with open(os.path.join(self.dir, sm.CHECKPOINT_FILE)) as f:
            c = json.load(f)
        self.assertEqual((c["iterations"], c["epoch"], c["batch"], c["samples"], c["reason"]), (6, 1, 3, 24, "signal"))

        again = sm.Checkpointer(self.dir, signals=False, env={})
        self.assertTrue(again.resumed)
        self.assertEqual((again.iterations, again.epoch, again.batch, again.resumes), (6, 1, 3, 1))
        # Epoch 1 resumes after its 3 done batches; epoch 2 is whole.
        self.assertEqual(list(again.resume_pass(range(10, 15), 1)), [13, 14])
        self.assertEqual(list(again.resume_pass(range(20, 25), 2)), list(range(20, 25)))
        with self.assertRaises(ValueError):  # the caller's count disagrees
            again.step_done(99)

    def test_refuses_what_is_not_ours(self):
        os.makedirs(self.dir)
        path = os.path.join(self.dir, sm.CHECKPOINT_FILE)
        for content in ('{"version":1,"job":"other"}', "not json", '[1]',
                        '{"version":1,"job":"synergy_metrics","iterations":-1,"epoch":0,"batch":0,"samples":0,"saves":0,"resumes":0}',
                        '{"version":1,"job":"synergy_metrics","iterations":1,"epoch":0,"batch":0,"samples":0,"saves":1,'
                        '"resumes":0,"state_file":"../../etc/passwd"}',
                        "x" * (sm._MAX_CHECKPOINT_JSON + 10)):
            with open(path, "w") as f:
                f.write(content)
            with self.assertRaises(ValueError) as cm:
                sm.Checkpointer(self.dir, signals=False, env={})
            self.assertIn(path, str(cm.exception))
        os.remove(path)
        os.symlink("/etc/passwd", path)
        with self.assertRaises(ValueError):
            sm.Checkpointer(self.dir, signals=False, env={})

    def test_no_directory_saves_nothing(self):
        ck = sm.Checkpointer("", signals=False, env={})
        ck.step_done()
        self.assertFalse(ck.save("periodic"))
        ck.stop_signal = "SIGTERM"
        with self.assertRaises(SystemExit):
            ck.step_done()
        self.assertFalse(os.path.exists(self.dir))


# A training script written as the helper's docstring says: a linear model
# over a DataLoader of numbered samples, logging each batch's sample ids.
TOY = r'''
import json, os, sys, time
import torch
sys.path.insert(0, %(here)r)
from synergy_metrics import SynergyMetrics, checkpointer, seed_epoch
torch.manual_seed(0); torch.set_num_threads(1)
data = torch.arange(37, dtype=torch.float32)
ds = torch.utils.data.TensorDataset(torch.arange(37), data)
loader = torch.utils.data.DataLoader(ds, batch_size=5, shuffle=True, num_workers=int(sys.argv[2]))
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
ck = checkpointer(model=model, optimizer=opt)
log = open(sys.argv[1], "a")
with SynergyMetrics() as m:
    m.iterations = ck.iterations
    for epoch in range(ck.epoch, 4):
        seed_epoch(loader, 7, epoch)
        for ids, x in m.wrap(ck.resume_pass(loader, epoch), epoch=epoch):
            loss = ((model(x[:, None] / 37) - 1) ** 2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            time.sleep(0.03)
            log.write(json.dumps({"epoch": epoch, "ids": ids.tolist()}) + "\n"); log.flush()
            ck.step_done(m.step_done())
        ck.end_epoch()
    ck.save("done")
print(json.dumps([p.tolist() for p in model.parameters()]))
'''


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class ToyPreemptionTest(unittest.TestCase):
    """A script that registers its model and optimizer, stopped by SIGUSR1
    and SIGTERM mid-epoch: joined, its runs train the same batches in the
    same order, and end with the same weights, as one uninterrupted run."""

    def run_toy(self, d, ck, stops, workers):
        script = os.path.join(d, "toy.py")
        with open(script, "w") as f:
            f.write(TOY % {"here": HERE})
        log, metrics = os.path.join(d, "batches-%s.jsonl" % ck), os.path.join(d, "m-%s.jsonl" % ck)
        env = clean_env(SYNERGY_METRICS_FILE=metrics)
        if ck:
            env["SYNERGY_CHECKPOINT_DIR"] = os.path.join(d, ck)
        for sig, after in stops:
            with subprocess.Popen([sys.executable, script, log, str(workers)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) as p:
                code = stop_after(p, metrics, after, sig)
                err = p.stderr.read()
            self.assertEqual(code, sm.EXIT_PREEMPTED, err)
            self.assertIn("checkpoint saved at iteration", err)
            with open(os.path.join(d, ck, sm.CHECKPOINT_FILE)) as f:
                c = json.load(f)
            self.assertEqual(c["iterations"], count_lines(metrics), "the checkpoint counts every line written")
            self.assertEqual(c["reason"], "signal")
        p = subprocess.run([sys.executable, script, log, str(workers)], env=env, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return read_lines(log), read_lines(metrics), json.loads(p.stdout.strip().splitlines()[-1])

    def test_preempted_twice_trains_as_one_run(self):
        with tempfile.TemporaryDirectory() as d:
            want_batches, want_lines, want_weights = self.run_toy(d, "", [], 0)
            self.assertEqual(len(want_batches), 4 * 8)  # 37 samples in batches of 5: 8 per epoch
            # 8 batches per epoch: 11 and 20 lines land mid-epoch.
            got_batches, got_lines, got_weights = self.run_toy(
                d, "ck", [(signal.SIGUSR1, 11), (signal.SIGTERM, 20)], 1)
            self.assertEqual(got_batches, want_batches, "a batch lost, repeated or reordered")
            self.assertEqual([l["iter"] for l in got_lines], list(range(32)))
            self.assertEqual([l["epoch"] for l in got_lines], [l["epoch"] for l in want_lines])
            self.assertEqual(got_weights, want_weights, "the model or optimizer state was not resumed")
            self.assertEqual(sorted(n for n in os.listdir(os.path.join(d, "ck")) if not n.startswith(".")),
                             ["checkpoint.json", "state-3.pt"], "older state files are removed")


@unittest.skipUnless(HAVE_REFERENCE, "torch, torchvision, torchaudio, numpy and PIL are not importable by %s"
                     % sys.executable)
class ReferenceJobsPreemptionTest(unittest.TestCase):
    """Each reference job stopped by SIGUSR1 mid-pass and started again:
    the stream goes on at the next iteration, with the epochs of an
    uninterrupted run."""

    @classmethod
    def setUpClass(cls):
        import io
        import gen_data
        cls.tmp = tempfile.TemporaryDirectory()
        cls.data = {}
        for kind, size, extra in (("image", "200KiB", ["--size", "64x48"]), ("speech", "384528", ["--seconds", "1"]),
                                  ("text", "40KiB", [])):
            d = os.path.join(cls.tmp.name, kind)
            gen_data.generate(gen_data.parse_args([kind, "--dir", d, "--bytes", size, "-q"] + extra), out=io.StringIO())
            cls.data[kind] = d

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def preempt(self, script, kind, *argv, iterations=14, after=5):
        def run(name, stop):
            metrics = os.path.join(self.tmp.name, "%s-%s.jsonl" % (self.id(), name))
            env = clean_env(SYNERGY_METRICS_FILE=metrics,
                            SYNERGY_CHECKPOINT_DIR=os.path.join(self.tmp.name, "%s-%s.ck" % (self.id(), name)))
            cmd = [sys.executable, os.path.join(HERE, script), "--data", self.data[kind], "-j", "1",
                   "--max-iterations", str(iterations), "--print-freq", "0"] + list(argv)
            if stop:
                with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as p:
                    code = stop_after(p, metrics, after, signal.SIGUSR1)
                    self.assertEqual(code, sm.EXIT_PREEMPTED, p.stderr.read())
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            if stop:
                self.assertIn("resumed at iteration", p.stdout)
            return read_lines(metrics)
        want, got = run("whole", False), run("stopped", True)
        self.assertEqual([l["iter"] for l in got], list(range(iterations)), "an iteration lost or repeated")
        self.assertEqual([(l["epoch"], l["samples"]) for l in got], [(l["epoch"], l["samples"]) for l in want])

    def test_image(self):
        self.preempt("train_imagenet.py", "image", "-b", "4", "--emulate-gpu", "v100")

    def test_speech(self):
        self.preempt("train_speech.py", "speech", "-b", "4", "--clip-seconds", "0.5", "--emulate-gpu", "v100")

    def test_language_real_step(self):
        self.preempt("train_lm.py", "text", "-b", "4", "--seq-len", "8", "--emsize", "16", "--nhid", "16")


if __name__ == "__main__":
    unittest.main()
