#!/usr/bin/env python3
"""An MNIST-shaped training script as pytorch/examples' mnist/main.py is
written, with only torch and no download: 28x28 digits are generated
locally (a seeded tensor dataset), the same two-conv network trains on the
CPU with a num_workers=0 DataLoader (the example's CPU setting), and each
epoch ends with an evaluation over the test set. It follows no synergy
contract: the profiler sees it as it is.

  mnist_like.py [--batch-size N] [--epochs N] [--train N] [--test N] [--log-interval N]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def digits(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.rand(n, 1, 28, 28, generator=g) * 0.3
    for d in range(10):  # a bright bar per class, so the net has something to learn
        x[y == d, 0, 2 + 2 * d:4 + 2 * d, 4:24] += 0.7
    return torch.utils.data.TensorDataset((x - 0.1307) / 0.3081, y)


def train(args, model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(loader.dataset), 100. * batch_idx / len(loader), loss.item()), flush=True)


def test(model, loader):
    model.eval()
    loss, correct = 0, 0
    with torch.no_grad():
        for data, target in loader:
            out = model(data)
            loss += F.nll_loss(out, target, reduction="sum").item()
            correct += out.argmax(dim=1).eq(target).sum().item()
    n = len(loader.dataset)
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n".format(loss / n, correct, n, 100. * correct / n), flush=True)


def main():
    p = argparse.ArgumentParser(description="MNIST-like")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=14)
    p.add_argument("--train", type=int, default=6000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(digits(args.train, 1), batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(digits(args.test, 2), batch_size=args.test_batch_size)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        test(model, test_loader)


if __name__ == "__main__":
    main()
