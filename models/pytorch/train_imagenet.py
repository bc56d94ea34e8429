#!/usr/bin/env python3
"""Reference ImageNet-style training script that follows synergy's job contract.

It trains a torchvision model (ResNet-18 by default) on an ImageFolder dataset
(DIR/<class>/<image>, as `synthtrain gen --preset image` writes) with the
standard ImageNet augmentation in DataLoader worker processes, and writes
synergy's metrics stream through synergy_metrics.py. It is what
`synergy profile` expects of a script (docs/job-contract.md):

  - the profiler appends --batch, --workers, --max-iterations and --data
    (and, for stall breakdowns, --synthetic-data); the last value of a
    repeated flag wins;
  - it appends one JSON line per iteration to $SYNERGY_METRICS_FILE;
  - it exits 0 after --max-iterations iterations, and may be killed at any
    moment before that.

Without CUDA, --emulate-gpu NAME replaces the model's step by a timed wait
of its measured step time on that GPU (synergy_metrics.GPU_STEPS), so the
real data path runs at a real GPU's pace and the stream says "emulated"; the
model is then never built. With CUDA the real step runs.

Run it by hand:
  python3 train_imagenet.py --data /datasets/imagenet/train -b 256 -j 8 --max-iterations 100
  python3 gen_data.py image --dir /tmp/img --bytes 256MiB
  python3 train_imagenet.py --data /tmp/img -b 32 --max-iterations 50 --emulate-gpu v100
Profile it (in an image holding torch, torchvision and both .py files):
  synergy profile --runner docker --docker-img my-train:1 --data /datasets/imagenet/train \\
      --cpus 2,4,8 --mem-limits 16GiB,32GiB -b 256 -- python3 /app/train_imagenet.py --arch resnet50

Needs torch and torchvision; the helper needs only the standard library.
"""

import argparse
import os
import sys

import reference_loop
from synergy_metrics import add_contract_args, add_emulation_args, default_workers


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_contract_args(p, batch=256, workers=default_workers(), max_iterations=0)
    p.add_argument("--arch", default="resnet18", help="torchvision.models architecture (default resnet18)")
    p.add_argument("--epochs", type=int, default=90, help="passes over the data, if --max-iterations does not stop it first")
    p.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--image-size", type=int, default=224, help="crop size fed to the model")
    p.add_argument("--classes", type=int, default=0, help="output classes (default: the dataset's)")
    p.add_argument("--print-freq", type=int, default=50, help="log every N iterations (0: never)")
    p.add_argument("--device", default="", help="cuda, cuda:N or cpu (default: cuda when available)")
    p.add_argument("--amp", action="store_true", help="mixed precision (CUDA only)")
    add_emulation_args(p)
    reference_loop.add_checkpoint_args(p)
    args = p.parse_args(argv)
    reference_loop.check_common(p, args)
    if args.image_size < 1:
        p.error("--image-size: must be >= 1, got %d" % args.image_size)
    if not args.synthetic_data:
        if not args.data:
            p.error("--data: required (an ImageFolder directory), or give --synthetic-data")
        if not os.path.isdir(args.data):
            p.error("--data: %s is not a directory" % args.data)
    return args


def build_loader(args, torch, torchvision):
    """The data path: ImageFolder + RandomResizedCrop/flip/normalise in
    DataLoader workers, or (with --synthetic-data) one random batch fed again
    and again, so only the model's step remains."""
    import torchvision.transforms as T

    if args.synthetic_data:
        n = args.classes or 1000
        images = torch.randn(args.batch, 3, args.image_size, args.image_size)
        labels = torch.randint(0, n, (args.batch,))

        class Repeat:
            def __len__(self):
                return 1 << 30

            def __iter__(self):
                while True:
                    yield images, labels

        return Repeat(), n
    normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    dataset = torchvision.datasets.ImageFolder(args.data, T.Compose([
        T.RandomResizedCrop(args.image_size),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        normalize,
    ]))
    if len(dataset) == 0:
        sys.exit("train_imagenet: --data: no images under %s" % args.data)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        pin_memory=torch.cuda.is_available(), drop_last=False,
        persistent_workers=args.workers > 0)
    return loader, args.classes or len(dataset.classes)


def main(argv=None):
    args = parse_args(argv)
    import torch
    import torchvision

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    step = reference_loop.resolve_step("train_imagenet", args, cuda, args.arch)
    if cuda:
        torch.backends.cudnn.benchmark = True
    loader, classes = build_loader(args, torch, torchvision)
    if args.arch not in torchvision.models.list_models(module=torchvision.models):
        sys.exit("train_imagenet: --arch: %r is not a torchvision classification model" % args.arch)
    reference_loop.banner("train_imagenet", args.arch, args, step, device, torch.get_num_threads(),
                          ", %d classes" % classes)
    if step:
        # The model is never built: no GPU, and its CPU step would compete
        # with the loader for the point's cores.
        return reference_loop.run(args, loader, step=step)

    model = torchvision.models.get_model(args.arch, num_classes=classes).to(device)
    criterion = torch.nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    use_amp = args.amp and cuda
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    else:  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    model.train()

    def real_step(batch):
        images, target = batch
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        with torch.autocast(device.type, enabled=use_amp):
            loss = criterion(model(images), target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if cuda:
            # CUDA runs asynchronously: the step ends when the GPU is done,
            # or its time would count as the next data wait.
            torch.cuda.synchronize(device)
        return loss

    return reference_loop.run(args, loader, real_step=real_step, state={"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    sys.exit(main())
