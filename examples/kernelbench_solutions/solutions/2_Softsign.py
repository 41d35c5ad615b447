# Correct: plain torch, written differently from the reference.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.div(x, torch.abs(x).add_(1.0))
