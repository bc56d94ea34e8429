"""Tests of the dataset generators (gen_data.py) and of the three reference
jobs run for a few iterations under real torch (skipped where this
interpreter cannot import numpy, PIL, torch, torchvision and torchaudio; the
Go test turns that skip into a failure under SYNERGY_REQUIRE=torch).
"""

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
HAVE_DATA = all(importlib.util.find_spec(m) is not None for m in ("numpy", "PIL"))
HAVE_TORCH = HAVE_DATA and all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision", "torchaudio"))

import gen_data  # noqa: E402  (numpy is imported lazily)


def generate(*argv):
    out = io.StringIO()
    return gen_data.generate(gen_data.parse_args(list(argv) + ["-q"]), out=out), out.getvalue()


def tree_digest(d):
    """sha256 over every file's relative path and content."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


class ParseTest(unittest.TestCase):
    def test_sizes(self):
        for text, want in (("256MiB", 256 << 20), ("1.5GB", 1500000000), ("4096", 4096), ("64 KiB", 65536)):
            self.assertEqual(gen_data.parse_bytes(text), want, text)
        for bad in ("", "12XB", "-1", "0"):
            with self.assertRaises(Exception) as cm:
                gen_data.parse_bytes(bad)
            self.assertIn("--bytes", str(cm.exception))


@unittest.skipUnless(HAVE_DATA, "numpy and PIL are not importable by %s" % sys.executable)
class GenDataTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, *p):
        return os.path.join(self.dir.name, *p)

    def test_image_folder(self):
        m, _ = generate("image", "--dir", self.path("a"), "--bytes", "200KiB", "--size", "80x60", "--classes", "3")
        from PIL import Image
        files = [os.path.join(r, n) for r, _, fs in os.walk(self.path("a")) for n in fs if n.endswith(".jpg")]
        self.assertEqual(len(files), m["files"])
        self.assertEqual(sorted(os.listdir(self.path("a"))), ["class-00", "class-01", "class-02", gen_data.MANIFEST])
        total = sum(os.path.getsize(f) for f in files)
        self.assertEqual(total, m["bytes"])
        # Within one file of the target.
        self.assertLess(abs(total - 200 * 1024), 2 * total / len(files))
        with Image.open(files[0]) as im:
            self.assertEqual((im.format, im.size, im.mode), ("JPEG", (80, 60), "RGB"))

    def test_same_seed_same_bytes_other_seed_not(self):
        generate("image", "--dir", self.path("a"), "--bytes", "60KiB", "--size", "40x30")
        generate("image", "--dir", self.path("b"), "--bytes", "60KiB", "--size", "40x30")
        generate("image", "--dir", self.path("c"), "--bytes", "60KiB", "--size", "40x30", "--seed", "2")
        self.assertEqual(tree_digest(self.path("a")), tree_digest(self.path("b")))
        self.assertNotEqual(tree_digest(self.path("a")), tree_digest(self.path("c")))
        # A file's content depends on the seed and its index only, not on
        # how the work was split between processes.
        self.assertEqual(gen_data._write_images((self.path("d"), 1, 3, 4, 10, 40, 30, 90)),
                         os.path.getsize(gen_data._image_path(self.path("a"), 3, 10)))
        with open(gen_data._image_path(self.path("a"), 3, 10), "rb") as f1, \
                open(gen_data._image_path(self.path("d"), 3, 10), "rb") as f2:
            self.assertEqual(f1.read(), f2.read())

    def test_rerun_is_a_noop_and_foreign_dirs_are_refused(self):
        generate("speech", "--dir", self.path("s"), "--bytes", "100KiB", "--seconds", "0.5")
        before = tree_digest(self.path("s"))
        _, msg = generate("speech", "--dir", self.path("s"), "--bytes", "100KiB", "--seconds", "0.5")
        self.assertIn("already there", msg)
        self.assertEqual(tree_digest(self.path("s")), before)
        with self.assertRaisesRegex(SystemExit, r"holds a different dataset \(files: 6 there, 3 asked; seconds: 0.5 there, 1.0 asked\)"):
            generate("speech", "--dir", self.path("s"), "--bytes", "100KiB", "--seconds", "1")
        os.mkdir(self.path("other"))
        open(self.path("other", "x"), "w").close()
        with self.assertRaisesRegex(SystemExit, "not empty and holds no synergy-dataset.json"):
            generate("text", "--dir", self.path("other"), "--bytes", "1KiB")

    def test_speech_wavs(self):
        m, _ = generate("speech", "--dir", self.path("s"), "--bytes", "160KiB", "--seconds", "1", "--rate", "8000")
        # 1 s at 8 kHz, 16-bit mono: 16044 bytes per file; 163840 / 16044 = 10.2 -> 10 files
        self.assertEqual(m["files"], 10)
        with wave.open(os.path.join(self.path("s"), "class-00", "clip-000000.wav")) as w:
            self.assertEqual((w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()), (1, 2, 8000, 8000))
            import numpy as np
            x = np.frombuffer(w.readframes(8000), dtype="<i2")
        self.assertGreater(np.abs(x).max(), 1000, "silent clip")

    def test_text_shards(self):
        m, _ = generate("text", "--dir", self.path("t"), "--bytes", "100KiB", "--shard-bytes", "32KiB", "--vocab", "500")
        # 102400 bytes of uint16 = 51200 tokens in shards of 16384: 4 shards, the last 2048 tokens
        with open(self.path("t", "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta, {"vocab_size": 500, "dtype": "uint16", "tokens": 51200, "tokens_per_shard": 16384})
        sizes = [os.path.getsize(self.path("t", "tokens-%05d.bin" % i)) for i in range(4)]
        self.assertEqual(sizes, [32768, 32768, 32768, 4096])
        import numpy as np
        toks = np.fromfile(self.path("t", "tokens-00000.bin"), dtype="<u2")
        self.assertLess(int(toks.max()), 500)
        self.assertEqual(m["files"], 4)


@unittest.skipUnless(HAVE_TORCH, "torch, torchvision and torchaudio are not importable by %s" % sys.executable)
class ReferenceJobsTest(unittest.TestCase):
    """Each reference job for a few iterations, emulated V100 step."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.data = {}
        # 12 one-second clips of 16 kHz PCM: 12 * (44 + 32000) bytes, 3 batches of 4.
        for kind, size, extra in (("image", "200KiB", ["--size", "64x48"]), ("speech", "384528", ["--seconds", "1"]),
                                  ("text", "200KiB", [])):
            d = os.path.join(cls.tmp.name, kind)
            generate(kind, "--dir", d, "--bytes", size, *extra)
            cls.data[kind] = d

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_job(self, script, kind, *argv, iterations=6):
        metrics = os.path.join(self.tmp.name, "%s.jsonl" % self.id())
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNERGY_")}
        env.update(SYNERGY_METRICS_FILE=metrics, SYNERGY_POINT="cpus=1 mem=1GiB", PYTHONDONTWRITEBYTECODE="1")
        p = subprocess.run([sys.executable, os.path.join(HERE, script), "--data", self.data[kind], "-j", "1",
                            "--max-iterations", str(iterations), "--print-freq", "0"] + list(argv),
                           env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(metrics) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([l["iter"] for l in lines], list(range(iterations)))
        return p, lines

    def check_emulated(self, lines, label, batch):
        for l in lines:
            self.assertEqual((l["emulated"], l["step_source"], l["samples"]), (True, label, batch))
            self.assertGreaterEqual(l["step_s"], l["step_intended_s"])

    def test_image(self):
        p, lines = self.run_job("train_imagenet.py", "image", "-b", "4", "--emulate-gpu", "v100")
        self.check_emulated(lines, "gpemu v100 resnet18 batch 256: 264.2 ms, scaled to batch 4", 4)
        self.assertIn("[cpus=1 mem=1GiB]", p.stdout)

    def test_image_mobilenet(self):
        _, lines = self.run_job("train_imagenet.py", "image", "-b", "4", "--arch", "mobilenet_v2",
                                "--emulate-gpu", "v100", iterations=3)
        self.check_emulated(lines, "synergy v100 mobilenet batch 512: 458.1 ms, scaled to batch 4", 4)

    def test_language(self):
        _, lines = self.run_job("train_lm.py", "text", "-b", "20", "--emulate-gpu", "v100")
        self.check_emulated(lines, "gavel v100 lstm batch 20: 15.4 ms", 20)

    def test_language_real_step(self):
        _, lines = self.run_job("train_lm.py", "text", "-b", "4", "--seq-len", "8", "--emsize", "16", "--nhid", "16",
                                iterations=3)
        self.assertTrue(all("emulated" not in l for l in lines))

    def test_speech(self):
        _, lines = self.run_job("train_speech.py", "speech", "-b", "4", "--clip-seconds", "0.5", "--emulate-gpu", "v100")
        self.check_emulated(lines, "synergy v100 m5 batch 512: 240.0 ms, scaled to batch 4", 4)

    def test_speech_real_step(self):
        _, lines = self.run_job("train_speech.py", "speech", "-b", "4", "--clip-seconds", "0.5", iterations=3)
        self.assertTrue(all("emulated" not in l for l in lines))

    def test_unknown_gpu_names_the_flag(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNERGY_")}
        p = subprocess.run([sys.executable, os.path.join(HERE, "train_lm.py"), "--data", self.data["text"],
                            "--emulate-gpu", "h100"], env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 1)
        self.assertIn("train_lm: --emulate-gpu h100: no measured step time for model 'lstm' on GPU 'h100'", p.stderr)


if __name__ == "__main__":
    unittest.main()
