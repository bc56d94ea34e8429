#!/usr/bin/env python3
"""An ImageNet-shaped training script as pytorch/examples' imagenet/main.py
is written (-j workers, -b batch, --epochs, a shuffled DataLoader whose
workers do the augmentation, a validation pass after each epoch), with only
torch and no download: its "images" are generated locally as uint8 tensors
(seeded per index), and each sample is cropped, flipped and normalised in
the worker, which is the CPU work a JPEG pipeline puts on the loader. The
step is a small CNN trained on the CPU. It follows no synergy contract.

  imagenet_like.py [-j N] [-b N] [--epochs N] [--images N] [--size N]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Images(torch.utils.data.Dataset):
    def __init__(self, n, size, train):
        self.n, self.size, self.train = n, size, train

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, self.size + 32, self.size + 32), dtype=torch.uint8, generator=g)
        img = img.float()
        for _ in range(3):  # the decode's and augmentation's CPU work
            img = F.avg_pool2d(img.unsqueeze(0), 3, 1, 1).squeeze(0)
        if self.train:
            y0, x0 = torch.randint(0, 33, (2,)).tolist()
            img = img[:, y0:y0 + self.size, x0:x0 + self.size]
            if torch.rand(1).item() < 0.5:
                img = img.flip(2)
        else:
            img = img[:, 16:16 + self.size, 16:16 + self.size]
        return (img / 255.0 - 0.45) / 0.225, i % 10


def main():
    p = argparse.ArgumentParser(description="ImageNet-like")
    p.add_argument("-j", "--workers", type=int, default=4)
    p.add_argument("-b", "--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--images", type=int, default=2048)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--print-freq", type=int, default=10)
    args = p.parse_args()
    torch.manual_seed(0)
    train_loader = torch.utils.data.DataLoader(Images(args.images, args.size, True), batch_size=args.batch_size,
                                               shuffle=True, num_workers=args.workers)
    val_loader = torch.utils.data.DataLoader(Images(args.images // 8, args.size, False), batch_size=args.batch_size,
                                             shuffle=False, num_workers=args.workers)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        for i, (x, y) in enumerate(train_loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % args.print_freq == 0:
                print("Epoch: [%d][%d/%d]\tLoss %.4f" % (epoch, i, len(train_loader), loss.item()), flush=True)
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
        print(" * Acc@1 %.3f" % (100.0 * correct / len(val_loader.dataset)), flush=True)


if __name__ == "__main__":
    main()
