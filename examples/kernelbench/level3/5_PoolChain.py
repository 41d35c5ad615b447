# Sizes that must stay consistent: at --scale 4 or 3 the last conv gets an empty input; the importer
# takes the largest scale that works (2).
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = nn.Conv2d(channels, channels, 3)
    def forward(self, x):
        return self.conv(self.pool(self.pool(self.pool(x))))
batch = 2
channels = 3
side = 48
def get_inputs():
    return [torch.randn(batch, channels, side, side)]
def get_init_inputs():
    return [channels]
