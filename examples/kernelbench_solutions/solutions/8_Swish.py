# Known bad: defines no ModelNew (the class is misnamed), so there is nothing to judge.
import torch
import torch.nn as nn


class ModelNw(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)
