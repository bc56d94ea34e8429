#!/usr/bin/env python3
"""Probe test script: trains a linear model on tensors it makes itself and
never builds a DataLoader (as a script with its own input loop, or DALI's,
would), so the probe must report that it saw no loader."""

import sys

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(64, 8, generator=g), torch.randn(64, 1, generator=g)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("no_loader: loss %.4f" % loss.item())
