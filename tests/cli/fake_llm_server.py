"""A stand-in OpenAI-compatible endpoint for tests/cli/synth_llm.sh: answers
POST /v1/chat/completions with a canned model.py, then with a reply that has
no code block, then with a model.py that fails to load (no get_inputs), in turn. Prints
its port on stdout, then serves until killed. With --by-seed the reply is chosen by the request's seed instead
(seed % 3, a good model's width from the seed too), so that a request gets the same reply whenever it is sent
(tests/cli/resume_synth_llm.sh).

    python fake_llm_server.py [--by-seed] [--log FILE]
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
BY_SEED = "--by-seed" in sys.argv[1:]
# --log FILE: the seed of every request answered, a line each, for a test to count what was asked.
LOG = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv[1:] else None


def reply_to(request):
    if LOG:
        with open(LOG, "a") as log:
            log.write(f"{request.get('seed')}\n")
    if not BY_SEED:
        return next(REPLIES)
    seed = int(request.get("seed", 0))
    if seed % 3 == 1:
        return NO_CODE
    if seed % 3 == 2:
        return BROKEN
    width = 16 + seed % 7 * 8  # tasks of other shapes, so that not every good reply is a duplicate
    return GOOD.replace("randn(8, 32)", f"randn(8, {width})").replace("return [32]", f"return [{width}]")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions" or "messages" not in request:
            self.send_error(404)
            return
        body = json.dumps({"object": "chat.completion", "model": request.get("model", ""),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": reply_to(request)}}]}).encode()
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
