"""A stand-in OpenAI-compatible endpoint for tests/cli/synth_llm_sandbox.sh: answers POST /v1/chat/completions with
the contents of the files given as arguments, in turn. Prints its port on stdout, then serves until killed.

    python fake_llm_replies.py REPLY_FILE...
"""
import http.server
import itertools
import json
import sys

REPLIES = itertools.cycle([open(path).read() for path in sys.argv[1:]])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
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
