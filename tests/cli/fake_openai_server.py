"""A scripted OpenAI-compatible endpoint for the ca-rollout protocol tests.
Request i to POST /v1/chat/completions gets step i of the script (the last
step repeats); every request is logged as one JSON line {"headers", "body"}
to LOG (the body as parsed JSON, or as text when it is not JSON). Prints its
port on stdout, then serves until killed.

    python fake_openai_server.py SCRIPT.json LOG.jsonl

A step is one of:
  {"message": {...}, "usage": {...}?, "finish_reason": "..."?, "logprobs": {...}?}
      a 200 chat completion whose choices[0].message is "message"
  {"status": 429, "body": "...", "retry_after": "0"?}   that status and body
  {"raw": "..."}       a 200 whose body is this text (truncated JSON, say)
  {"hang": true}       no answer until the client gives up
  {"close": true}      the connection closed without an answer
"""
import http.server
import json
import sys
import threading
import time

script = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
lock = threading.Lock()
served = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        text = self.rfile.read(int(self.headers["Content-Length"])).decode("utf-8", "replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = text
        with lock:
            step = script[min(served[0], len(script) - 1)]
            served[0] += 1
            with open(log_path, "a") as log:
                log.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": body}) + "\n")
        if self.path != "/v1/chat/completions":
            return self.answer(404, "not found")
        if step.get("hang"):
            time.sleep(3600)  # the client's timeout ends the request; the test kills the server
        if step.get("close"):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if "raw" in step:
            return self.answer(200, step["raw"])
        if "status" in step:
            return self.answer(step["status"], step.get("body", ""), step.get("retry_after"))
        choice = {"index": 0, "message": dict({"role": "assistant"}, **step["message"]),
                  "finish_reason": step.get("finish_reason", "tool_calls" if "tool_calls" in step["message"] else "stop")}
        if "logprobs" in step:
            choice["logprobs"] = step["logprobs"]
        reply = {"id": f"chatcmpl-{served[0]}", "object": "chat.completion", "model": body.get("model", ""),
                 "choices": [choice]}
        if "usage" in step:
            reply["usage"] = step["usage"]
        self.answer(200, json.dumps(reply))

    def answer(self, status, text, retry_after=None):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
