"""A CPU-only stand-in for python/refserver.py with the same command line and endpoints
(stdlib only: no torch, no aiohttp), for tests of the Go side without a GPU.

Run by a ReferenceConfig whose python is a wrapper that swaps the script, e.g.
  python: integrate/testdata/fakepython   (exec python3 fake_refserver.py "$@" minus the script)
Token timing: first token after 20 ms + 0.02 ms per prompt token, then one token every
FAKE_ITL_MS (default 5) ms. /hook/stats reports the override manifest it was given, with
calls counted as the real hook would count them under CUDA graphs (one eager + one capture
call per new batch size) so a report can be checked end to end.

POST /profile/start {"trace_path"} and POST /profile/stop answer as the real server does
(ProfileWindow: trace_path, window_s, active_s, requests_done, trace_bytes; TRACE.window.json
beside the trace). The trace is synthetic, with a share known by construction: over every
interval of the window during which >= 1 request was in flight (their union is active_s), one
stream runs back-to-back steps of STEP_S (the interval split into equal steps), each step
  fake_rms_pow (TARGET_SHARE/2) fake_rms_mul (TARGET_SHARE/2) fake_rms_pow (DECOY_SHARE)
  fake_gemm (GEMM_SHARE) idle (the rest),
so the sequence [fake_rms_pow, fake_rms_mul] covers exactly TARGET_SHARE of the active wall
time (f_wall = TARGET_SHARE) and TARGET_SHARE / BUSY_SHARE of GPU busy time (f_gpu); the lone
fake_rms_pow is a decoy that only a sequence match, not a name match, leaves out. No
record_function ranges and no CUDA-graph ids: attribution is by kernel sequence or pattern.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"lock": threading.Lock(), "sizes": set(), "calls": {"eager": 0, "capture": 0, "compiling": 0},
         "in_flight": 0, "open": {}, "closed": [], "done": 0, "next_id": 0, "prof": None}

STEP_S = 0.001
TARGET_SHARE = 0.25
DECOY_SHARE = 0.05
GEMM_SHARE = 0.60
BUSY_SHARE = TARGET_SHARE + DECOY_SHARE + GEMM_SHARE


def union_within(ivs, t0, t1):
    """The union of intervals clipped to [t0, t1], as sorted disjoint (start, end) pairs."""
    out = []
    for a, b in sorted((max(a, t0), min(b, t1)) for a, b in ivs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def synthetic_trace(active, t0):
    """Kernel events (Chrome trace, µs from t0) covering each active interval in equal steps."""
    ev = []

    def kernel(name, a, b):
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                   "ts": round((a - t0) * 1e6, 3), "dur": round((b - a) * 1e6, 3),
                   "args": {"device": 0, "stream": 7}})

    for a, b in active:
        n = max(1, int(round((b - a) / STEP_S)))
        step = (b - a) / n
        for i in range(n):
            s = a + i * step
            marks = [s, s + step * TARGET_SHARE / 2, s + step * TARGET_SHARE,
                     s + step * (TARGET_SHARE + DECOY_SHARE), s + step * BUSY_SHARE]
            for name, x, y in zip(["fake_rms_pow", "fake_rms_mul", "fake_rms_pow", "fake_gemm"], marks, marks[1:]):
                kernel(name, x, y)
    return {"traceEvents": ev, "displayTimeUnit": "ms"}


def manifest_override():
    p = os.environ.get("TRANSFERLAB_OVERRIDE_MANIFEST")
    if not p:
        return None
    with open(p) as f:
        return json.load(f)["overrides"][0]


def write_receipt():
    """Writes the install receipt the real hook writes (the launcher refuses a server without one)."""
    p = os.environ.get("TRANSFERLAB_OVERRIDE_MANIFEST")
    if not p:
        return
    with open(p) as f:
        man = json.load(f)
    os.makedirs(man["stats_dir"], exist_ok=True)
    rec = {"pid": os.getpid(), "argv": sys.argv, "python": sys.executable, "manifest": p,
           "overrides": [{"name": o["name"], "target": o["target"], "mode": o["mode"], "installed": True, "error": None}
                         for o in man["overrides"]]}
    with open(os.path.join(man["stats_dir"], f"receipt-{os.getpid()}.json"), "w") as f:
        json.dump(rec, f)


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
        if self.path == "/profile/start":
            return self.profile_start(body)
        if self.path == "/profile/stop":
            return self.profile_stop()
        if self.path != "/v1/completions":
            return self.send_json(404, {"error": "not found"})
        prompt = body.get("prompt")
        n_in = len(prompt) if isinstance(prompt, list) else len(str(prompt).encode())
        n_out = int(body.get("max_tokens", 16))
        with state["lock"]:
            state["in_flight"] += 1
            b = state["in_flight"]
            rid = state["next_id"]
            state["next_id"] += 1
            state["open"][rid] = time.monotonic()
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
                state["closed"].append((state["open"].pop(rid), time.monotonic()))
                state["done"] += 1
        self.close_connection = True

    def profile_start(self, body):
        path = body.get("trace_path")
        if not path:
            return self.send_json(400, {"error": "trace_path: required"})
        with state["lock"]:
            if state["prof"] is not None:
                return self.send_json(409, {"error": "a profile window is already open"})
            t0 = time.monotonic()
            # Requests that ended before the window carry nothing into it.
            state["closed"] = [iv for iv in state["closed"] if iv[1] > t0]
            state["prof"] = {"path": path, "t0": t0, "unix0": time.time_ns(), "done0": state["done"]}
        return self.send_json(200, {"status": "started", "trace_path": path})

    def profile_stop(self):
        with state["lock"]:
            p = state["prof"]
            if p is None:
                return self.send_json(409, {"error": "no profile window is open"})
            t1 = time.monotonic()
            state["prof"] = None
            ivs = list(state["closed"]) + [(a, t1) for a in state["open"].values()]
            done = state["done"] - p["done0"]
        active = union_within(ivs, p["t0"], t1)
        trace = synthetic_trace(active, p["t0"])
        active_s = sum(b - a for a, b in active)
        hook = None
        if os.environ.get("TRANSFERLAB_HOOK_TIMINGS"):
            # As the real server with hook timings: the trace knows its Unix base, a CPU
            # range marks the profiler window, and the hook's "profile" window covers it,
            # saying FAKE_HOOK_RATIO x the target kernel time the trace holds
            # (TARGET_SHARE x active time by construction).
            win_us = round((t1 - p["t0"]) * 1e6, 3)
            trace["baseTimeNanoseconds"] = p["unix0"]
            trace["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": "fake::window", "pid": 0,
                                         "tid": 1, "ts": 0, "dur": win_us})
            ratio = float(os.environ.get("FAKE_HOOK_RATIO", "1"))
            gpu_ms = TARGET_SHARE * active_s * 1e3 * ratio
            u0, u1 = p["unix0"], p["unix0"] + int(win_us * 1e3)
            win = lambda label, a, b, calls, ms: {"label": label, "start_unix_ns": a, "end_unix_ns": b, "calls": calls,
                                                 "eager_calls": calls, "capture_calls": 0, "timed_calls": calls,
                                                 "gpu_time_ms": ms, "active_wall_ms": None}
            # One call per synthetic step, as synthetic_trace cuts the active intervals.
            calls = sum(max(1, int(round((b - a) / STEP_S))) for a, b in active)
            w0 = win("before-profile", u0 - 10**9, u0, 3, 0.5)
            w1 = win("profile", u0, u1, calls, gpu_ms)
            ov = manifest_override() or {}
            hook = [{"format": "transferlab.hook_timings/v1", "target": ov.get("target", ""), "mode": ov.get("mode", "off"),
                     "timing": "cuda_event", "calls": 3 + calls, "eager_calls": 3 + calls, "capture_calls": 0, "timed_calls": 3 + calls,
                     "gpu_time_ms": 0.5 + gpu_ms, "windows": [w0, w1]}]
        with open(p["path"], "w") as f:
            json.dump(trace, f)
        out = {"trace_path": p["path"], "window_s": t1 - p["t0"], "active_s": active_s,
               "requests_done": done, "trace_bytes": os.path.getsize(p["path"])}
        with open(p["path"] + ".window.json", "w") as f:
            json.dump(out, f)
        if hook is not None:
            out["hook_timings"] = hook
        return self.send_json(200, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    srv = ThreadingHTTPServer((a.host, a.port), H)
    srv.daemon_threads = True
    srv.cfg_path = a.config
    write_receipt()
    print(f"fake refserver: ready on {a.host}:{a.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
