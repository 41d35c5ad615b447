"""A stand-in OpenAI-compatible endpoint for tests/cli/synth_llm.sh: answers
POST /v1/chat/completions with a canned model.py, then with a reply that has
no code block, then with a model.py that fails to load (no get_inputs), in turn. Prints
its port on stdout, then serves until killed.

    python fake_llm_server.py
"""
import http.server
import itertools
import json
import sys

GOOD = '''Here is the file:

```python
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)) * x


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32]
```
'''
NO_CODE = "I cannot write that model."
BROKEN = "```python\nimport torch\nclass Model(torch.nn.Module):\n    pass\n```\n"
REPLIES = itertools.cycle([GOOD, NO_CODE, BROKEN])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions" or "messages" not in request:
            self.send_error(404)
            return
        body = json.dumps({"object": "chat.completion", "model": request.get("model", ""),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": next(REPLIES)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
