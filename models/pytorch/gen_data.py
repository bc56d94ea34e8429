#!/usr/bin/env python3
"""Generate a seeded dataset in a real training format for the reference jobs.

  gen_data.py image  --dir D --bytes 256MiB [--seed 1] [--classes 10] [--size 500x375] [--quality 90]
  gen_data.py speech --dir D --bytes 512MiB [--seed 1] [--classes 10] [--seconds 4] [--rate 16000]
  gen_data.py text   --dir D --bytes 64MiB  [--seed 1] [--vocab 10000] [--shard-bytes 16MiB]

image:  an ImageFolder (D/class-KK/img-NNNNNN.jpg): JPEGs of smooth colour
        fields with photographic-grain noise, about 80 KiB each at 500x375
        and quality 90 (ImageNet's training images average about 110 KiB at
        about 400x350), so decoding costs what a photo's does;
        train_imagenet.py reads it.
speech: D/class-KK/clip-NNNNNN.wav: 16-bit mono PCM, voiced-speech-like
        (a gliding fundamental with harmonics under a syllable envelope, plus
        noise); train_speech.py reads it.
text:   D/tokens-NNNNN.bin shards of little-endian token ids (uint16 when
        the vocabulary fits, else int32) drawn from a Zipf law with a
        first-order dependency, and D/meta.json; train_lm.py reads it.

Every file's content depends only on --seed and its index, so a dataset is
the same whatever the number of processes that wrote it, and --bytes only
decides how many files there are (the total is within one file of it).
D/synergy-dataset.json records the parameters; when it matches, the run is
a no-op ("already there"), and a directory holding anything else is refused.
Needs numpy (and PIL for images); uses every CPU this process may run on.
"""

import argparse
import functools
import json
import os
import re
import sys
import time
import wave
from concurrent.futures import ProcessPoolExecutor

MANIFEST = "synergy-dataset.json"
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1024, "m": 1e6, "mb": 1e6, "mib": 1024 ** 2,
          "g": 1e9, "gb": 1e9, "gib": 1024 ** 3}


def parse_bytes(text, flag="--bytes"):
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError("%s: %r is not a size (e.g. 256MiB, 1.5GB, 4096)" % (flag, text))
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n < 1:
        raise argparse.ArgumentTypeError("%s: %r must be at least 1 byte" % (flag, text))
    return n


def parse_size(text):
    m = re.fullmatch(r"(\d+)x(\d+)", str(text))
    if not m or int(m.group(1)) < 8 or int(m.group(2)) < 8:
        raise argparse.ArgumentTypeError("--size: %r is not WIDTHxHEIGHT with both >= 8 (e.g. 500x375)" % text)
    return int(m.group(1)), int(m.group(2))


def _rng(seed, index):
    import numpy as np
    return np.random.default_rng([int(seed), int(index)])


# ---- image ----------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _grain(seed, width, height):
    """Four fields of photographic grain (normal, sigma 14) a little larger
    than the image, made from the seed alone: each image crops one at its
    own offset, which costs far less than drawing fresh noise per image."""
    import numpy as np
    rng = np.random.default_rng([int(seed), 1 << 41])
    return [rng.normal(0.0, 14.0, (height + 32, width + 32, 3)).astype(np.int16) for _ in range(4)]


def _image_bytes(seed, index, width, height, quality):
    import io
    import numpy as np
    from PIL import Image
    rng = _rng(seed, index)
    # A smooth field: a coarse random grid upsampled, like large objects and
    # background; then grain, which is what makes a photo's JPEG large.
    gw, gh = max(2, width // 40), max(2, height // 40)
    coarse = rng.integers(0, 256, (gh, gw, 3), dtype=np.uint8)
    base = np.asarray(Image.fromarray(coarse).resize((width, height), Image.BILINEAR), dtype=np.int16)
    field = _grain(seed, width, height)[int(rng.integers(0, 4))]
    dy, dx = (int(v) for v in rng.integers(0, 33, 2))
    base += field[dy:dy + height, dx:dx + width]
    np.clip(base, 0, 255, out=base)
    out = io.BytesIO()
    Image.fromarray(base.astype(np.uint8)).save(out, "JPEG", quality=quality)
    return out.getvalue()


_SAMPLE_INDEX = 1 << 40


def _image_path(d, index, classes):
    return os.path.join(d, "class-%02d" % (index % classes), "img-%06d.jpg" % index)


def _write_images(args):
    d, seed, lo, hi, classes, width, height, quality = args
    total = 0
    for i in range(lo, hi):
        data = _image_bytes(seed, i, width, height, quality)
        _write(_image_path(d, i, classes), data)
        total += len(data)
    return total


# ---- speech ---------------------------------------------------------------

def _speech_samples(seed, index, seconds, rate):
    import numpy as np
    rng = _rng(seed, index)
    n = int(seconds * rate)
    t = np.arange(n, dtype=np.float32) / rate
    # A voiced source: a fundamental gliding around 90-250 Hz through one
    # period of 8 harmonics (a table lookup per sample, not 8 sines), under
    # a syllable-rate envelope, plus breath noise.
    f0 = rng.uniform(90, 250) * (1 + 0.15 * np.sin(2 * np.pi * rng.uniform(0.2, 1.0) * t))
    cycles = np.cumsum(f0 / rate, dtype=np.float64)
    period = _period()
    voice = period[((cycles - np.floor(cycles)) * period.size).astype(np.int32)]
    env = np.sin(np.pi * rng.uniform(2, 6) * t + rng.uniform(0, np.pi))
    np.clip(env, 0, None, out=env)
    sig = 0.25 * env * env * voice + rng.normal(0.0, 0.02, n).astype(np.float32)
    return (np.clip(sig, -1, 1) * 32767).astype("<i2")


@functools.lru_cache(maxsize=1)
def _period(size=4096, harmonics=8):
    import numpy as np
    ph = 2 * np.pi * np.arange(size) / size
    return sum(np.sin(k * ph) / k for k in range(1, harmonics + 1)).astype(np.float32)


def _speech_path(d, index, classes):
    return os.path.join(d, "class-%02d" % (index % classes), "clip-%06d.wav" % index)


def _wav_size(seconds, rate):
    return 44 + 2 * int(seconds * rate)


def _write_speech(args):
    d, seed, lo, hi, classes, seconds, rate = args
    total = 0
    for i in range(lo, hi):
        path = _speech_path(d, i, classes)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with wave.open(tmp, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(_speech_samples(seed, i, seconds, rate).tobytes())
        os.replace(tmp, path)
        total += os.path.getsize(path)
    return total


# ---- text -----------------------------------------------------------------

def _token_dtype(vocab):
    return "<u2" if vocab <= 65536 else "<i4"


def _shard_tokens(seed, index, count, vocab):
    import numpy as np
    rng = _rng(seed, index)
    # Zipf-distributed unigrams (p(k) ~ 1/(k+1)^1.1, drawn through the CDF);
    # half the tokens follow from their predecessor, so there is a sequence
    # to learn.
    toks = np.searchsorted(_zipf_cdf(vocab), rng.random(count)).astype(np.int64)
    follow = rng.random(count) < 0.5
    follow[0] = False
    toks[1:][follow[1:]] = (toks[:-1][follow[1:]] * 7 + 3) % vocab
    return toks.astype(_token_dtype(vocab))


@functools.lru_cache(maxsize=2)
def _zipf_cdf(vocab):
    import numpy as np
    cdf = np.cumsum(1.0 / np.arange(1, vocab + 1) ** 1.1)
    cdf /= cdf[-1]
    cdf[-1] = 1.0
    return cdf


def _write_text(args):
    d, seed, index, count, vocab = args
    data = _shard_tokens(seed, index, count, vocab).tobytes()
    _write(os.path.join(d, "tokens-%05d.bin" % index), data)
    return len(data)


# ---- common ---------------------------------------------------------------

def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _cpus():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _chunks(n, parts):
    step = max(1, -(-n // parts))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def plan(args):
    """The manifest (parameters and file count) for args; its "files" is
    the number of files the target byte count needs."""
    m = {"kind": args.kind, "seed": args.seed, "target_bytes": args.bytes}
    if args.kind == "image":
        w, h = args.size
        m.update(classes=args.classes, width=w, height=h, quality=args.quality)
        # Estimate a file's size from 8 images outside the dataset's indices
        # (cheap, deterministic).
        sample = sum(len(_image_bytes(args.seed, _SAMPLE_INDEX + k, w, h, args.quality)) for k in range(8)) / 8
        m["files"] = max(1, int(round(args.bytes / sample)))
    elif args.kind == "speech":
        m.update(classes=args.classes, seconds=args.seconds, rate=args.rate)
        m["files"] = max(1, int(round(args.bytes / _wav_size(args.seconds, args.rate))))
    else:
        width = 2 if args.vocab <= 65536 else 4
        per_shard = max(1, args.shard_bytes // width)
        tokens = max(1, args.bytes // width)
        m.update(vocab_size=args.vocab, dtype="uint16" if width == 2 else "int32",
                 tokens_per_shard=per_shard, tokens=tokens)
        m["files"] = -(-tokens // per_shard)
    return m


def generate(args, out=sys.stderr):
    d = args.dir
    want = plan(args)
    man_path = os.path.join(d, MANIFEST)
    if os.path.isdir(d) and os.listdir(d):
        try:
            with open(man_path) as f:
                have = json.load(f)
        except (OSError, ValueError):
            have = None
        if have is not None and {k: v for k, v in have.items() if k != "bytes"} == want:
            print("gen_data: %s already there (%d files, %d bytes)" % (d, have["files"], have.get("bytes", 0)), file=out)
            return have
        if have is None:
            raise SystemExit("gen_data: --dir: %s is not empty and holds no %s: refusing to write into it" % (d, MANIFEST))
        raise SystemExit("gen_data: --dir: %s holds a different dataset (%s): remove it first" % (
            d, "; ".join("%s: %s there, %s asked" % (k, have.get(k), want[k]) for k in sorted(want) if have.get(k) != want[k])))
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    n, procs = want["files"], _cpus()
    if args.kind == "image":
        jobs = [(d, args.seed, lo, hi, args.classes, want["width"], want["height"], args.quality)
                for lo, hi in _chunks(n, procs * 8)]
        fn = _write_images
    elif args.kind == "speech":
        jobs = [(d, args.seed, lo, hi, args.classes, args.seconds, args.rate) for lo, hi in _chunks(n, procs * 8)]
        fn = _write_speech
    else:
        per, left, jobs = want["tokens_per_shard"], want["tokens"], []
        for i in range(n):
            jobs.append((d, args.seed, i, min(per, left), args.vocab))
            left -= per
        fn = _write_text
    total, done = 0, 0
    with ProcessPoolExecutor(max_workers=procs) as pool:
        for b in pool.map(fn, jobs):
            total += b
            done += 1
            if args.progress and (done == len(jobs) or done % max(1, len(jobs) // 10) == 0):
                print("gen_data: %s %d%% (%.0f MiB, %.1f s)" % (args.kind, 100 * done // len(jobs), total / 2 ** 20,
                                                              time.time() - t0), file=out)
    want["bytes"] = total
    if args.kind == "text":
        want_meta = {k: want[k] for k in ("vocab_size", "dtype", "tokens", "tokens_per_shard")}
        _write(os.path.join(d, "meta.json"), (json.dumps(want_meta, indent=1) + "\n").encode())
    _write(man_path, (json.dumps(want, indent=1, sort_keys=True) + "\n").encode())
    print("gen_data: wrote %s: %d %s files, %.1f MiB in %.1f s on %d processes" % (
        d, n, args.kind, total / 2 ** 20, time.time() - t0, procs), file=out)
    return want


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=("image", "speech", "text"), help="dataset format")
    p.add_argument("--dir", required=True, help="directory to write (created; must be empty or hold the same dataset)")
    p.add_argument("--bytes", required=True, type=parse_bytes, help="total size, e.g. 256MiB")
    p.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    p.add_argument("--classes", type=int, default=10, help="image/speech: class directories (default 10)")
    p.add_argument("--size", type=parse_size, default=(500, 375), help="image: WIDTHxHEIGHT (default 500x375)")
    p.add_argument("--quality", type=int, default=90, help="image: JPEG quality 1-95 (default 90)")
    p.add_argument("--seconds", type=float, default=4.0, help="speech: clip length (default 4)")
    p.add_argument("--rate", type=int, default=16000, help="speech: sample rate in Hz (default 16000)")
    p.add_argument("--vocab", type=int, default=10000, help="text: vocabulary size (default 10000)")
    p.add_argument("--shard-bytes", dest="shard_bytes", type=lambda s: parse_bytes(s, "--shard-bytes"),
                   default=16 * 2 ** 20, help="text: bytes per shard (default 16MiB)")
    p.add_argument("-q", "--quiet", dest="progress", action="store_false", help="no progress lines")
    a = p.parse_args(argv)
    if a.classes < 1:
        p.error("--classes: must be >= 1, got %d" % a.classes)
    if not 1 <= a.quality <= 95:
        p.error("--quality: must be in 1..95, got %d" % a.quality)
    if not a.seconds > 0 or a.rate < 1000:
        p.error("--seconds must be > 0 and --rate >= 1000 (got %g s, %d Hz)" % (a.seconds, a.rate))
    if a.vocab < 2:
        p.error("--vocab: must be >= 2, got %d" % a.vocab)
    return a


if __name__ == "__main__":
    generate(parse_args())
