# An RNN whose hidden state is kept as plain tensor attributes and reassigned in forward (issue 24 item 4).
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, batch):
        super().__init__()
        self.h0 = torch.randn((num_layers, batch, hidden_size))
        self.c0 = torch.randn((num_layers, batch, hidden_size))
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, 4)
    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, state = self.lstm(x, (self.h0, self.c0))
        return self.fc(out[:, -1, :])

batch = 3
def get_inputs():
    return [torch.randn(batch, 5, 8)]
def get_init_inputs():
    return [8, 16, 2, batch]
