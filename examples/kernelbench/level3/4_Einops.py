# einops, which KernelBench's own problems import.
import torch, torch.nn as nn
from einops import rearrange
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return rearrange(x, "b (h w) c -> b c h w", h=4).relu()
def get_inputs():
    return [torch.randn(2, 16, 3)]
def get_init_inputs():
    return []
