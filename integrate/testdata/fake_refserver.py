"""A CPU-only stand-in for python/refserver.py with the same command line and endpoints
(stdlib only: no torch, no aiohttp), for tests of the Go side without a GPU.

Run by a ReferenceConfig whose python is a wrapper that swaps the script, e.g.
  python: integrate/testdata/fakepython   (exec python3 fake_refserver.py "$@" minus the script)
Token timing: first token after 20 ms + 0.02 ms per prompt token, then one token every
FAKE_ITL_MS (default 5) ms. /hook/stats reports the override manifest it was given, with
calls counted as the real hook would count them under CUDA graphs (one eager + one capture
call per new batch size) so a report can be checked end to end.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"lock": threading.Lock(), "sizes": set(), "calls": {"eager": 0, "capture": 0, "compiling": 0},
         "in_flight": 0}


def manifest_override():
    p = os.environ.get("TRANSFERLAB_OVERRIDE_MANIFEST")
    if not p:
        return None
    with open(p) as f:
        return json.load(f)["overrides"][0]


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        if self.path == "/health":
            return self.send_json(200, {"status": "ok"})
        if self.path == "/v1/models":
            return self.send_json(200, {"object": "list", "data": [{"id": "fake"}]})
        if self.path == "/manifest":
            return self.send_json(200, {"server": "fake-refserver", "versions": {"torch": "none (fake)"},
                                        "config": json.load(open(self.server.cfg_path))})
        if self.path == "/hook/stats":
            ov = manifest_override()
            if ov is None:
                return self.send_json(200, {"receipt": None, "overrides": [], "notes": ["no override manifest"]})
            with state["lock"]:
                calls = dict(state["calls"])
            total = sum(calls.values())
            served = {"candidate": total if ov["mode"] == "on" else 0,
                      "original": 0 if ov["mode"] == "on" else total}
            return self.send_json(200, {"receipt": {"pid": os.getpid(), "python": sys.executable,
                                                    "manifest": os.environ.get("TRANSFERLAB_OVERRIDE_MANIFEST")},
                                        "overrides": [{"name": ov["name"], "target": ov["target"], "mode": ov["mode"],
                                                       "candidate": ov.get("candidate"), "installed": True,
                                                       "calls": calls, "calls_total": total, "served_by": served,
                                                       "shapes": [], "shadow": {}, "bypass_suspected": False}],
                                        "notes": []})
        self.send_json(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/hook/window":
            return self.send_json(200, [])
        if self.path != "/v1/completions":
            return self.send_json(404, {"error": "not found"})
        prompt = body.get("prompt")
        n_in = len(prompt) if isinstance(prompt, list) else len(str(prompt).encode())
        n_out = int(body.get("max_tokens", 16))
        with state["lock"]:
            state["in_flight"] += 1
            b = state["in_flight"]
            if b not in state["sizes"]:
                state["sizes"].add(b)
                state["calls"]["eager"] += 65
                state["calls"]["capture"] += 65
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            time.sleep(0.02 + 0.00002 * n_in)
            itl = float(os.environ.get("FAKE_ITL_MS", "5")) / 1e3
            for i in range(n_out):
                if i:
                    time.sleep(itl)
                ev = {"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": f" {i}",
                      "finish_reason": "length" if i == n_out - 1 else None}]}
                self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
                self.wfile.flush()
            if (body.get("stream_options") or {}).get("include_usage"):
                u = {"id": "x", "choices": [], "usage": {"prompt_tokens": n_in, "completion_tokens": n_out,
                                                         "total_tokens": n_in + n_out}}
                self.wfile.write(b"data: " + json.dumps(u).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        finally:
            with state["lock"]:
                state["in_flight"] -= 1
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    srv = ThreadingHTTPServer((a.host, a.port), H)
    srv.daemon_threads = True
    srv.cfg_path = a.config
    print(f"fake refserver: ready on {a.host}:{a.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
