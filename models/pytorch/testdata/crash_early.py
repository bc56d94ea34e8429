#!/usr/bin/env python3
"""Probe test script: fails at start-up, before its first iteration, as a
script with a typo does (an AttributeError), with torch imported."""

import torch

model = torch.nn.Linear(4, 1)
model.not_a_method()
