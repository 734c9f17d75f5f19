"""transferlab reference server: OpenAI-compatible streaming completions on transformers'
continuous-batching engine, served with aiohttp. Embedded in the Go binary (integrate) and
written out at run time; the kernel-override hook (shim/tlhook) is loaded through PYTHONPATH.

Endpoints
  POST /v1/completions   prompt = token ids (list[int]) or text (utf-8 bytes -> ids 3..258, no
                         tokenizer: weights may be random), max_tokens, stream, stream_options.
                         include_usage, ignore_eos, min_tokens (accepted; = max_tokens when ignore_eos)
  GET  /v1/models, /health, /manifest, /hook/stats
  POST /profile/start {"trace_path": ".../trace.json"}   torch profiler window (CPU + CUDA)
  POST /profile/stop  -> {"trace_path", "window_s", "active_s", "requests_done"}

Config: --config FILE.json (written by integrate.ReferenceSpec):
  {"model": {"preset": "llama3-8b" | null, "params": {...LlamaConfig overrides...}},
   "dtype": "bfloat16", "seed": 0, "weights": "random" | "/path/to/hf-dir",
   "engine": {"attn_implementation": "paged|sdpa", "cb": {...ContinuousBatchingConfig fields...},
              "warmup_requests": 8, "warmup_prompt_tokens": 512, "warmup_output_tokens": 16},
   "served_model_name": "transferlab-ref"}
"""

import argparse
import asyncio
import hashlib
import json
import os
import sys
import threading
import time
import traceback

PRESETS = {
    # Llama-3-8B shape (meta-llama/Meta-Llama-3-8B config.json), random weights unless a path is given.
    "llama3-8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                      rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=128000,
                      eos_token_id=128001, hidden_act="silu"),
    # A small Llama for smoke tests.
    "llama-tiny": dict(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
                       num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096,
                       rms_norm_eps=1e-5, tie_word_embeddings=False),
}

HERE = os.path.dirname(os.path.abspath(__file__))


def code_sha256():
    """sha256 over this file and the hook package, in a fixed order."""
    h = hashlib.sha256()
    files = [os.path.abspath(__file__)]
    shim = os.path.join(HERE, "shim")
    for root, _, names in sorted(os.walk(shim)):
        for n in sorted(names):
            if n.endswith(".py") or n.endswith(".txt"):
                files.append(os.path.join(root, n))
    for p in files:
        h.update(os.path.relpath(p, HERE).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def build_model(cfg):
    """Builds the model on the GPU: random init (seeded, straight on the device) or from a path."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    dtype = getattr(torch, cfg.get("dtype", "bfloat16"))
    attn = cfg.get("engine", {}).get("attn_implementation", "paged|sdpa")
    weights = cfg.get("weights", "random")
    torch.manual_seed(int(cfg.get("seed", 0)))
    if weights == "random":
        m = cfg.get("model", {})
        params = dict(PRESETS[m.get("preset") or "llama3-8b"])
        params.update(m.get("params") or {})
        lc = LlamaConfig(**params)
        with torch.device("cuda"):
            try:
                model = LlamaForCausalLM._from_config(lc, attn_implementation=attn, dtype=dtype)
            except TypeError:  # transformers < 5 spells it torch_dtype
                model = LlamaForCausalLM._from_config(lc, attn_implementation=attn, torch_dtype=dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(weights, dtype=dtype, attn_implementation=attn,
                                                     device_map="cuda")
    model.eval()
    return model


def make_cb_config(engine):
    from transformers.generation.configuration_utils import CompileConfig, ContinuousBatchingConfig

    cb = dict(engine.get("cb") or {})
    for k in ("decode_compile_config", "varlen_compile_config"):
        if isinstance(cb.get(k), dict):
            cb[k] = CompileConfig(**cb[k])
    if isinstance(cb.get("use_cuda_graph"), list):
        cb["use_cuda_graph"] = tuple(cb["use_cuda_graph"])
    return ContinuousBatchingConfig(**cb)


def plain(obj, depth=0):
    """JSON-able view of configs (dataclasses, objects, tuples)."""
    if depth > 4:
        return repr(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, (list, tuple)):
        return [plain(v, depth + 1) for v in obj]
    if isinstance(obj, dict):
        return {str(k): plain(v, depth + 1) for k, v in obj.items()}
    d = getattr(obj, "__dict__", None)
    if d is None and hasattr(obj, "__dataclass_fields__"):
        d = {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    if d is not None:
        return {k: plain(v, depth + 1) for k, v in d.items() if not k.startswith("_") and not callable(v)}
    return repr(obj)


def versions():
    import torch

    out = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda_runtime": torch.version.cuda}
    for mod in ("transformers", "triton", "aiohttp"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as e:
            out[mod] = f"unavailable: {e!r}"
    try:
        out["gpu_name"] = torch.cuda.get_device_name(0)
        cap = torch.cuda.get_device_capability(0)
        out["gpu_capability"] = f"{cap[0]}.{cap[1]}"
        out["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    except Exception as e:
        out["gpu_name"] = f"unavailable: {e!r}"
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        out["driver"] = v.decode() if isinstance(v, bytes) else v
    except Exception as e:
        out["driver"] = f"unavailable: {e!r}"
    return out


class Engine:
    """Owns the model and the continuous-batching manager; routes results to asyncio queues."""

    def __init__(self, cfg):
        import torch
        from transformers import GenerationConfig

        self.cfg = cfg
        t0 = time.time()
        self.model = build_model(cfg)
        torch.cuda.synchronize()
        self.load_s = time.time() - t0
        self.vocab = self.model.config.vocab_size
        engine = cfg.get("engine", {})
        self.gen_config = GenerationConfig(max_new_tokens=int(engine.get("default_max_tokens", 256)),
                                           do_sample=False, eos_token_id=-1, pad_token_id=0)
        self.cb_requested = plain(engine.get("cb") or {})
        self.cb_config = make_cb_config(engine)
        self.manager = self.model.init_continuous_batching(generation_config=self.gen_config,
                                                           continuous_batching_config=self.cb_config)
        self.manager.start()
        self.queues = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.loop = None
        self.in_flight = 0
        self.active_since = None
        self.active_total_s = 0.0
        self.done = 0
        self.counter = 0
        self.dispatcher = threading.Thread(target=self._dispatch, name="tl-dispatch", daemon=True)

    def serve(self, loop):
        """Starts routing results to request queues on loop (after warm-up, which reads results itself)."""
        self.loop = loop
        self.dispatcher.start()

    def effective_cb(self):
        m = self.manager
        for attr in ("continuous_batching_config", "cb_config"):
            v = getattr(m, attr, None)
            if v is not None:
                return plain(v)
        bp = getattr(m, "batch_processor", None)
        return plain(getattr(bp, "continuous_batching_config", None))

    def _dispatch(self):
        """One thread drains the manager's output queue and routes each result by request id."""
        while not self.stop.is_set():
            try:
                res = self.manager.get_result(timeout=0.1)
            except Exception as e:
                sys.stderr.write(f"refserver: get_result failed: {e!r}\n")
                time.sleep(0.1)
                continue
            if res is None:
                if not self.manager.is_running():
                    sys.stderr.write("refserver: the generation loop stopped; failing in-flight requests\n")
                    with self.lock:
                        qs = list(self.queues.values())
                    for q in qs:
                        self.loop.call_soon_threadsafe(q.put_nowait, ("error", "generation loop stopped"))
                    self.stop.wait(1.0)
                continue
            toks = list(res.generated_tokens or [])
            finished = bool(res.is_finished()) if hasattr(res, "is_finished") else False
            err = getattr(res, "error", None)
            with self.lock:
                q = self.queues.get(res.request_id)
            if q is not None:
                self.loop.call_soon_threadsafe(q.put_nowait, ("tokens", toks, finished, err))

    def _mark(self, delta):
        now = time.monotonic()
        with self.lock:
            if self.in_flight == 0 and delta > 0:
                self.active_since = now
            self.in_flight += delta
            if self.in_flight == 0 and delta < 0 and self.active_since is not None:
                self.active_total_s += now - self.active_since
                self.active_since = None
            if delta < 0:
                self.done += 1

    def active_s(self):
        with self.lock:
            extra = time.monotonic() - self.active_since if self.active_since is not None else 0.0
            return self.active_total_s + extra

    async def generate(self, ids, max_tokens):
        """Yields lists of new token ids as they are produced; the last yield ends the request."""
        with self.lock:
            self.counter += 1
            rid = f"tl-{self.counter}"
            q = asyncio.Queue()
            self.queues[rid] = q
        self._mark(+1)
        finished_ok = False
        try:
            self.manager.add_request(input_ids=ids, request_id=rid, max_new_tokens=max_tokens, streaming=True,
                                     eos_token_id=-1)
            sent = 0
            while True:
                msg = await q.get()
                if msg[0] == "error":
                    raise RuntimeError(msg[1])
                _, toks, finished, err = msg
                if err:
                    raise RuntimeError(f"engine error: {err}")
                new = toks[sent:]
                sent = max(sent, len(toks))
                if new or finished:
                    yield new, finished
                if finished:
                    finished_ok = True
                    return
        finally:
            with self.lock:
                self.queues.pop(rid, None)
            if not finished_ok:  # client gone or error: stop generating for it
                try:
                    self.manager.cancel_request(rid)
                except Exception as e:
                    sys.stderr.write(f"refserver: cancel_request({rid}) failed: {e!r}\n")
            self._mark(-1)

    def warmup(self, n, prompt_tokens, output_tokens):
        """Runs n requests through the engine so CUDA graphs/compilation happen before serving."""
        import random

        rng = random.Random(int(self.cfg.get("seed", 0)))
        ids = [[rng.randrange(3, self.vocab) for _ in range(prompt_tokens)] for _ in range(n)]
        rids = [self.manager.add_request(input_ids=x, request_id=f"warmup-{i}", max_new_tokens=output_tokens,
                                         eos_token_id=-1) for i, x in enumerate(ids)]
        pending = set(rids)
        deadline = time.time() + 900
        while pending and time.time() < deadline:
            r = self.manager.get_result(timeout=0.5)
            if r is not None and (not hasattr(r, "is_finished") or r.is_finished()):
                pending.discard(r.request_id)
        if pending:
            raise RuntimeError(f"warm-up: {len(pending)} requests did not finish in 900 s")


def sse(obj):
    return ("data: " + json.dumps(obj, separators=(",", ":")) + "\n\n").encode()


def make_app(engine, cfg, manifest):
    from aiohttp import web

    name = cfg.get("served_model_name", "transferlab-ref")
    prof = {"p": None, "path": None, "t0": None, "active0": None, "done0": None}
    # The torch profiler must be stopped by the thread that started it: one thread does both.
    from concurrent.futures import ThreadPoolExecutor

    prof_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tl-profiler")

    async def health(_):
        ok = engine.manager.is_running()
        return web.json_response({"status": "ok" if ok else "engine stopped"}, status=200 if ok else 503)

    async def models(_):
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "transferlab"}]})

    async def get_manifest(_):
        return web.json_response(manifest, dumps=lambda o: json.dumps(o, default=str))

    async def hook_stats(_):
        import tlhook

        st = await asyncio.get_running_loop().run_in_executor(None, tlhook.stats)
        return web.json_response(st, dumps=lambda o: json.dumps(o, default=str))

    def close_hook_window(label):
        """Closes the hook's timing window (None when no hook or no timings are loaded)."""
        try:
            import tlhook
        except ImportError:
            return None
        h = tlhook.current()
        if h is None or not any(o.timings is not None for o in h.overrides):
            return None
        return h.close_window(label)

    async def hook_window(request):
        import tlhook

        body = await request.json() if request.can_read_body else {}
        h = tlhook.current()
        if h is None:
            return web.json_response({"error": "no override manifest: the hook is not loaded"}, status=409)
        docs = await asyncio.get_running_loop().run_in_executor(None, h.close_window, body.get("label"))
        return web.json_response(docs)

    async def profile_start(request):
        import torch

        body = await request.json()
        if prof["p"] is not None:
            return web.json_response({"error": "a profile window is already open"}, status=409)
        path = body.get("trace_path")
        if not path:
            return web.json_response({"error": "trace_path: required"}, status=400)
        p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                               torch.profiler.ProfilerActivity.CUDA],
                                   record_shapes=bool(body.get("record_shapes", False)))
        await asyncio.get_running_loop().run_in_executor(prof_thread, p.start)
        prof.update(p=p, path=path, t0=time.monotonic(), active0=engine.active_s(), done0=engine.done)
        # With hook timings on, a timing window opens with the profiler window (after it, at the
        # serving thread's next target call) and closes before the profiler stops, so the hook's
        # CUDA-event target time and the profile's kernel time cover the same calls.
        await asyncio.get_running_loop().run_in_executor(None, close_hook_window, "before-profile")
        return web.json_response({"status": "started", "trace_path": path})

    async def profile_stop(_):
        p = prof["p"]
        if p is None:
            return web.json_response({"error": "no profile window is open"}, status=409)
        hook_docs = await asyncio.get_running_loop().run_in_executor(None, close_hook_window, "profile")
        active = engine.active_s() - prof["active0"]  # read before the window, so active <= window
        window = time.monotonic() - prof["t0"]
        done = engine.done - prof["done0"]
        prof["p"] = None

        def finish():
            p.stop()
            p.export_chrome_trace(prof["path"])

        await asyncio.get_running_loop().run_in_executor(prof_thread, finish)
        out = {"trace_path": prof["path"], "window_s": window, "active_s": active, "requests_done": done,
               "trace_bytes": os.path.getsize(prof["path"])}
        with open(prof["path"] + ".window.json", "w") as f:
            json.dump(out, f)
        if hook_docs is not None:
            # transferlab.hook_timings/v1 documents, one per override with timings; the last
            # window of each is the profiled one.
            out["hook_timings"] = hook_docs
            with open(prof["path"] + ".hook.json", "w") as f:
                json.dump(hook_docs, f)
        return web.json_response(out)

    async def completions(request):
        t_recv = time.time()
        try:
            body = await request.json()
        except Exception as e:
            return web.json_response({"error": {"message": f"body: invalid JSON: {e}"}}, status=400)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
            prompt = prompt[0]
        if isinstance(prompt, str):
            ids = [3 + b for b in prompt.encode()]
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            bad = [t for t in prompt if not 0 <= t < engine.vocab]
            if bad:
                return web.json_response({"error": {"message": f"prompt: token id {bad[0]} outside [0, {engine.vocab})"}},
                                         status=400)
            ids = prompt
        else:
            return web.json_response({"error": {"message": "prompt: want a non-empty list of token ids or a string"}},
                                     status=400)
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return web.json_response({"error": {"message": f"max_tokens: want an integer >= 1, got {max_tokens!r}"}},
                                     status=400)
        stream = bool(body.get("stream", False))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage", False))
        rid = f"cmpl-{int(t_recv * 1e6)}"
        created = int(t_recv)
        n_out = 0
        if not stream:
            toks = []
            try:
                async for new, _ in engine.generate(ids, max_tokens):
                    toks.extend(new)
            except RuntimeError as e:
                return web.json_response({"error": {"message": str(e)}}, status=500)
            return web.json_response({
                "id": rid, "object": "text_completion", "created": created, "model": name,
                "choices": [{"index": 0, "text": "".join(f" {t}" for t in toks), "token_ids": toks,
                             "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(toks),
                          "total_tokens": len(ids) + len(toks)}})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        try:
            async for new, finished in engine.generate(ids, max_tokens):
                if new:
                    n_out += len(new)
                    await resp.write(sse({"id": rid, "object": "text_completion", "created": created, "model": name,
                                          "choices": [{"index": 0, "text": "".join(f" {t}" for t in new),
                                                       "token_ids": new,
                                                       "finish_reason": "length" if finished else None}]}))
            if include_usage:
                await resp.write(sse({"id": rid, "object": "text_completion", "created": created, "model": name,
                                      "choices": [], "usage": {"prompt_tokens": len(ids), "completion_tokens": n_out,
                                                               "total_tokens": len(ids) + n_out}}))
            await resp.write(b"data: [DONE]\n\n")
        except RuntimeError as e:
            await resp.write(sse({"error": {"message": str(e)}}))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        await resp.write_eof()
        return resp

    app = web.Application(client_max_size=64 << 20)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/manifest", get_manifest)
    app.router.add_get("/hook/stats", hook_stats)
    app.router.add_post("/hook/window", hook_window)
    app.router.add_post("/profile/start", profile_start)
    app.router.add_post("/profile/stop", profile_stop)
    app.router.add_post("/v1/completions", completions)
    return app


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)

    import tlhook  # the shim is on PYTHONPATH; bootstrap already ran in sitecustomize when a manifest is named

    engine = Engine(cfg)
    ecfg = cfg.get("engine", {})
    t0 = time.time()
    engine.warmup(int(ecfg.get("warmup_requests", 8)), int(ecfg.get("warmup_prompt_tokens", 512)),
                  int(ecfg.get("warmup_output_tokens", 16)))
    warm_s = time.time() - t0
    if tlhook.current() is not None:
        tlhook.current().require_installed()  # never serve the baseline silently
        tlhook.current().set_active_clock(engine.active_s)
    import torch

    manifest = {
        "server": "transferlab-refserver", "code_sha256": code_sha256(), "versions": versions(),
        "model_config": engine.model.config.to_dict(), "dtype": cfg.get("dtype", "bfloat16"),
        "weights": ("random-init, seed %d" % int(cfg.get("seed", 0))) if cfg.get("weights", "random") == "random"
        else cfg["weights"],
        "attn_implementation": ecfg.get("attn_implementation", "paged|sdpa"),
        "cb_config_requested": engine.cb_requested, "cb_config_effective": engine.effective_cb(),
        "load_s": engine.load_s, "warmup_s": warm_s, "pid": os.getpid(),
        "memory_allocated_bytes_after_warmup": torch.cuda.memory_allocated(),
        "memory_reserved_bytes_after_warmup": torch.cuda.memory_reserved(),
        "override_manifest": os.environ.get(tlhook.ENV_MANIFEST),
        "hook_receipt": tlhook.current().receipt() if tlhook.current() else None,
        "config": cfg,
    }
    from aiohttp import web

    async def on_startup(app):
        engine.serve(asyncio.get_running_loop())

    app = make_app(engine, cfg, manifest)
    app.on_startup.append(on_startup)

    async def on_cleanup(app):
        engine.stop.set()
        try:
            engine.manager.stop(block=True, timeout=10)
        except Exception:
            traceback.print_exc()
        if tlhook.current() is not None:
            tlhook.current().dump()

    app.on_cleanup.append(on_cleanup)
    sys.stderr.write(f"refserver: ready on http://{args.host}:{args.port} (load {engine.load_s:.1f} s, "
                     f"warm-up {warm_s:.1f} s)\n")
    web.run_app(app, host=args.host, port=args.port, access_log=None, print=None, handle_signals=True)


if __name__ == "__main__":
    main()
