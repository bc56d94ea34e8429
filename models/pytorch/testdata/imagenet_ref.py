#!/usr/bin/env python3
"""A training script in the shape of the widely copied ImageNet reference
script, written here for synergy's tests (no synergy code, no metrics, no
iteration cap): the dataset is a positional directory (DIR/train and DIR/val
when they exist, else DIR itself for training), -j/--workers, -b/--batch-size,
--epochs. `synergy profile` must profile it unmodified: argument templates
fill its flags and the injected DataLoader probe measures it.

  python3 imagenet_ref.py /data/imagenet -j 4 -b 64 --epochs 1
"""

import argparse
import os
import time

import torch
import torchvision
import torchvision.transforms as T


def parse_args():
    p = argparse.ArgumentParser(description="ImageNet-style training (the reference script's command line)")
    p.add_argument("data", metavar="DIR", help="dataset: DIR/train and DIR/val, or an ImageFolder")
    p.add_argument("-a", "--arch", default="resnet18", help="torchvision model (default resnet18)")
    p.add_argument("-j", "--workers", type=int, default=4, help="data loading workers (default 4)")
    p.add_argument("--epochs", type=int, default=90, help="epochs (default 90)")
    p.add_argument("-b", "--batch-size", type=int, default=256, help="mini-batch size (default 256)")
    p.add_argument("--lr", "--learning-rate", type=float, default=0.1, dest="lr")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", "--weight-decay", type=float, default=1e-4, dest="weight_decay")
    p.add_argument("-p", "--print-freq", type=int, default=10, help="print every N batches")
    return p.parse_args()


def loaders(args):
    norm = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dir = os.path.join(args.data, "train")
    val_dir = os.path.join(args.data, "val")
    if not os.path.isdir(train_dir):
        train_dir, val_dir = args.data, None
    train = torchvision.datasets.ImageFolder(train_dir, T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), norm]))
    train_loader = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True,
                                               num_workers=args.workers, pin_memory=True)
    val_loader = None
    if val_dir and os.path.isdir(val_dir):
        val = torchvision.datasets.ImageFolder(val_dir, T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), norm]))
        val_loader = torch.utils.data.DataLoader(val, batch_size=args.batch_size, shuffle=False,
                                                 num_workers=args.workers, pin_memory=True)
    return train_loader, val_loader, len(train.classes)


def main():
    args = parse_args()
    train_loader, val_loader, classes = loaders(args)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torchvision.models.__dict__[args.arch](num_classes=classes).to(device)
    criterion = torch.nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    for epoch in range(args.epochs):
        model.train()
        end = time.time()
        for i, (images, target) in enumerate(train_loader):
            images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % args.print_freq == 0:
                print("Epoch: [%d][%d/%d]\ttime %.3f\tloss %.4f" % (epoch, i, len(train_loader), time.time() - end, loss.item()),
                      flush=True)
            end = time.time()
        if val_loader is not None:
            model.eval()
            correct = total = 0
            with torch.no_grad():
                for images, target in val_loader:
                    out = model(images.to(device))
                    correct += (out.argmax(1).cpu() == target).sum().item()
                    total += target.numel()
            print("Epoch: [%d] val acc %.3f" % (epoch, correct / max(1, total)), flush=True)


if __name__ == "__main__":
    main()
