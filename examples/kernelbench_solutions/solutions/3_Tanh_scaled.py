# Known bad: returns zeros. Every output of the reference is below KernelBench's atol of 1e-2, so
# torch.allclose passes it; the project's normalized-error check (||out - ref|| / ||ref|| within rtol) does not.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x)
