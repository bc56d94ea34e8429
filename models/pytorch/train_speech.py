#!/usr/bin/env python3
"""Reference speech job (Synergy's "speech" class: memory-sensitive).

Audio classification on WAV clips in class directories (DIR/<class>/*.wav,
as `gen_data.py speech` writes them): DataLoader workers decode each clip
with torchaudio, cut a random --clip-seconds window (time-shift
augmentation) with a random gain, and compute a log-mel spectrogram
(torchaudio.transforms.MelSpectrogram); a small 2-D CNN classifies it.
Clips are large (4 s of 16 kHz PCM is 125 KiB) and the features cheap next
to a JPEG's decode, so once the dataset no longer fits in the page cache the
job waits on the disk: it is the class whose throughput Synergy found to
depend on memory (the zoo's m5: 1.5x to 2.5x from 62.5 to 187.5 GB).

It follows synergy's job contract (docs/job-contract.md) through
synergy_metrics.py. Without CUDA, --emulate-gpu NAME waits the measured
step of --emulate-model (default m5, Synergy's audio model) on that GPU
instead of running the model.

  python3 gen_data.py speech --dir /tmp/speech --bytes 512MiB
  python3 train_speech.py --data /tmp/speech -b 32 --max-iterations 100 --emulate-gpu v100
"""

import argparse
import os
import sys

import reference_loop
from synergy_metrics import add_contract_args, add_emulation_args, default_workers


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_contract_args(p, batch=32, workers=default_workers(), max_iterations=0)
    p.add_argument("--epochs", type=int, default=30, help="passes over the data (default 30)")
    p.add_argument("--sample-rate", dest="sample_rate", type=int, default=16000,
                   help="rate the clips must have, Hz (default 16000)")
    p.add_argument("--clip-seconds", dest="clip_seconds", type=float, default=3.0,
                   help="window cut from each clip, seconds (default 3; shorter clips are padded)")
    p.add_argument("--n-mels", dest="n_mels", type=int, default=64, help="mel bands (default 64)")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    p.add_argument("--print-freq", type=int, default=50, help="log every N iterations (0: never)")
    p.add_argument("--device", default="", help="cuda, cuda:N or cpu (default: cuda when available)")
    add_emulation_args(p, model="m5")
    reference_loop.add_checkpoint_args(p)
    args = p.parse_args(argv)
    reference_loop.check_common(p, args)
    if args.sample_rate < 1000 or not args.clip_seconds > 0 or args.n_mels < 1:
        p.error("--sample-rate must be >= 1000, --clip-seconds > 0 and --n-mels >= 1 (got %d, %g, %d)" % (
            args.sample_rate, args.clip_seconds, args.n_mels))
    if not args.synthetic_data:
        if not args.data:
            p.error("--data: required (a directory of <class>/*.wav), or give --synthetic-data")
        if not os.path.isdir(args.data):
            p.error("--data: %s is not a directory" % args.data)
    return args


def list_clips(data):
    """(path, class index) of every .wav under data/<class>/, classes sorted."""
    classes = sorted(e.name for e in os.scandir(data) if e.is_dir())
    clips = []
    for k, c in enumerate(classes):
        d = os.path.join(data, c)
        clips += [(os.path.join(d, n), k) for n in sorted(os.listdir(d)) if n.endswith(".wav")]
    return clips, classes


class Clips:
    """Map-style dataset: decode, random window and gain, log-mel features."""

    def __init__(self, clips, rate, clip_seconds, n_mels):
        import torchaudio
        self.clips, self.rate = clips, rate
        self.length = int(rate * clip_seconds)
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=rate, n_fft=400, hop_length=160, n_mels=n_mels)

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        import torch
        import torchaudio
        path, label = self.clips[i]
        wave, rate = torchaudio.load(path)
        if rate != self.rate:
            raise ValueError("train_speech: %s: %d Hz, --sample-rate says %d" % (path, rate, self.rate))
        wave = wave.mean(0)  # mono
        if wave.numel() >= self.length:
            off = int(torch.randint(0, wave.numel() - self.length + 1, ()))
            wave = wave[off:off + self.length]
        else:
            wave = torch.nn.functional.pad(wave, (0, self.length - wave.numel()))
        wave = wave * float(torch.empty(()).uniform_(0.5, 1.5))
        return torch.log(self.mel(wave) + 1e-6).unsqueeze(0), label


def build_loader(args, torch):
    frames = int(args.sample_rate * args.clip_seconds) // 160 + 1
    if args.synthetic_data:
        x = torch.randn(args.batch, 1, args.n_mels, frames)
        y = torch.zeros(args.batch, dtype=torch.long)

        class Repeat:
            def __iter__(self):
                while True:
                    yield x, y

        return Repeat(), 10
    clips, classes = list_clips(args.data)
    if not clips:
        sys.exit("train_speech: --data: no <class>/*.wav under %s" % args.data)
    ds = Clips(clips, args.sample_rate, args.clip_seconds, args.n_mels)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         drop_last=False, persistent_workers=args.workers > 0)
    return loader, len(classes)


def main(argv=None):
    args = parse_args(argv)
    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    step = reference_loop.resolve_step("train_speech", args, cuda, "m5")
    loader, classes = build_loader(args, torch)
    reference_loop.banner("train_speech", "log-mel CNN", args, step, device, torch.get_num_threads(),
                          ", %d classes, %d mel bands" % (classes, args.n_mels))
    if step:
        return reference_loop.run(args, loader, step=step)

    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    model.train()

    def real_step(batch):
        x, y = (t.to(device, non_blocking=True) for t in batch)
        loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize(device)
        return loss

    return reference_loop.run(args, loader, real_step=real_step, state={"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    sys.exit(main())
