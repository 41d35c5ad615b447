"""Writes KernelBench-style problem files (Model, get_inputs, get_init_inputs) for the transformer and recurrent
modules of the installed torch.nn, so that `ca-crawl kernelbench DIR` shows what the importer can express of them
(issue 24 item 4). Usage: python torch_module_problems.py DIR

Each module is used as an application would: a transformer with a causal mask (generate_square_subsequent_mask,
whose -inf the IR must hold), recurrent layers with their hidden state kept on the module between calls, as a plain
tensor attribute or a buffer updated in forward.
"""
import sys
from pathlib import Path

HEADER = "import torch\nimport torch.nn as nn\n\n"

PROBLEMS = {
    "1_Transformer": """
class Model(nn.Module):
    def __init__(self, d, heads, layers):
        super().__init__()
        self.net = nn.Transformer(d, heads, layers, layers, dim_feedforward=2 * d, dropout=0.0, batch_first=True)
    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.net(src, tgt, tgt_mask=mask, tgt_is_causal=True)
def get_inputs():
    return [torch.randn(2, 12, 32), torch.randn(2, 10, 32)]
def get_init_inputs():
    return [32, 4, 2]
""",
    "2_TransformerEncoderCausal": """
class Model(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.net = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.net(x, mask=mask, is_causal=True)
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return [32, 4]
""",
    "3_TransformerDecoderLayer": """
class Model(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.net = nn.TransformerDecoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True)
    def forward(self, tgt, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.net(tgt, memory, tgt_mask=mask)
def get_inputs():
    return [torch.randn(2, 10, 32), torch.randn(2, 12, 32)]
def get_init_inputs():
    return [32, 4]
""",
    "4_MultiheadAttentionCausal": """
class Model(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
    def forward(self, x):
        t = x.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return [32, 4]
""",
    "5_RNNPlainState": """
class Model(nn.Module):
    def __init__(self, n, h, layers, batch):
        super().__init__()
        self.rnn = nn.RNN(n, h, layers, batch_first=True)
        self.h0 = torch.randn(layers, batch, h)
    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        out, hn = self.rnn(x, self.h0)
        return out
def get_inputs():
    return [torch.randn(4, 7, 16)]
def get_init_inputs():
    return [16, 32, 2, 4]
""",
    "6_LSTMPlainState": """
class Model(nn.Module):
    def __init__(self, n, h, layers, batch):
        super().__init__()
        self.lstm = nn.LSTM(n, h, layers, batch_first=True)
        self.h0 = torch.randn(layers, batch, h)
        self.c0 = torch.randn(layers, batch, h)
    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, state = self.lstm(x, (self.h0, self.c0))
        return state[0]
def get_inputs():
    return [torch.randn(4, 7, 16)]
def get_init_inputs():
    return [16, 32, 2, 4]
""",
    "7_GRUBufferState": """
class Model(nn.Module):
    def __init__(self, n, h, batch):
        super().__init__()
        self.gru = nn.GRU(n, h, batch_first=True, bidirectional=True)
        self.register_buffer("h", torch.zeros(2, batch, h))
    def forward(self, x):
        out, hn = self.gru(x, self.h)
        self.h.copy_(hn.detach())
        return out
def get_inputs():
    return [torch.randn(4, 7, 16)]
def get_init_inputs():
    return [16, 32, 4]
""",
    "8_Cells": """
class Model(nn.Module):
    def __init__(self, n, h, batch):
        super().__init__()
        self.rnn = nn.RNNCell(n, h)
        self.lstm = nn.LSTMCell(h, h)
        self.gru = nn.GRUCell(h, h)
        self.register_buffer("state", torch.zeros(batch, h))
    def forward(self, x):
        a = self.rnn(x, self.state)
        b, c = self.lstm(a)
        out = self.gru(b, c)
        self.state.copy_(out)
        return out
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return [16, 32, 4]
""",
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, body in PROBLEMS.items():
        (out / f"{name}.py").write_text(HEADER + body.lstrip("\n"))
    print(f"{len(PROBLEMS)} problems in {out}")


if __name__ == "__main__":
    main()
