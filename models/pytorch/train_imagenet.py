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

Run it by hand:
  python3 train_imagenet.py --data /datasets/imagenet/train -b 256 -j 8 --max-iterations 100
Profile it (in an image holding torch, torchvision and both .py files):
  synergy profile --runner docker --docker-img my-train:1 --data /datasets/imagenet/train \\
      --cpus 2,4,8 --mem-limits 16GiB,32GiB -b 256 -- python3 /app/train_imagenet.py --arch resnet50

Needs torch and torchvision; the helper needs only the standard library.
"""

import argparse
import os
import sys
import time

from synergy_metrics import SynergyMetrics, add_contract_args, default_workers


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
    args = p.parse_args(argv)
    for name in ("batch", "workers", "epochs", "image_size"):
        if getattr(args, name) < 1 and not (name == "workers" and getattr(args, name) == 0):
            p.error("--%s: must be >= 1, got %d" % (name.replace("_", "-"), getattr(args, name)))
    if args.max_iterations < 0:
        p.error("--max-iterations: must be >= 0 (0: no cap), got %d" % args.max_iterations)
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
    if cuda:
        torch.backends.cudnn.benchmark = True
    loader, classes = build_loader(args, torch, torchvision)
    if args.arch not in torchvision.models.list_models(module=torchvision.models):
        sys.exit("train_imagenet: --arch: %r is not a torchvision classification model" % args.arch)
    model = torchvision.models.get_model(args.arch, num_classes=classes).to(device)
    criterion = torch.nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    use_amp = args.amp and cuda
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    else:  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    model.train()

    point = os.environ.get("SYNERGY_POINT", "")
    print("train_imagenet: %s on %s, batch %d, %d workers, %d classes%s" % (
        args.arch, device, args.batch, args.workers, classes, (" [" + point + "]") if point else ""), flush=True)
    start = time.time()
    with SynergyMetrics() as metrics:
        for epoch in range(args.epochs):
            for images, target in metrics.wrap(loader, epoch=epoch):
                images = images.to(device, non_blocking=True)
                target = target.to(device, non_blocking=True)
                with torch.autocast(device.type, enabled=use_amp):
                    loss = criterion(model(images), target)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                if cuda:
                    # CUDA runs asynchronously: the step ends when the GPU is
                    # done, or its time would count as the next data wait.
                    torch.cuda.synchronize(device)
                done = metrics.step_done()
                if args.print_freq and done % args.print_freq == 0:
                    print("iter %d epoch %d loss %.4f %.1f samples/s" % (
                        done, epoch, loss.item(), done * args.batch / (time.time() - start)), flush=True)
                if args.max_iterations and done >= args.max_iterations:
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
