"""Device exploration for integrate (first H200 call), kept with the results it produced
(ENGINE.md). Not part of the product: it finds the
continuous-batching configuration for the reference server, checks the Triton RMSNorm and the
hook under the engine, and takes a short profile. Usage:

  python3 explore.py all OUTDIR          # everything, each step in its own subprocess
  python3 explore.py engine NAME OUTDIR  # one engine configuration
  python3 explore.py kernel OUTDIR       # Triton RMSNorm correctness and speed
"""
import json
import os
import random
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.join(REPO, "integrate", "python")  # refserver.py, validate_gate.py, shim/
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "shim"))

CONFIGS = {
    "default": {},
    "cg": {"use_cuda_graph": True, "max_memory_percent": 0.5},
    "cg_async": {"use_cuda_graph": True, "use_async_batching": True, "max_memory_percent": 0.5},
    "cg_c1": {"use_cuda_graph": True, "max_memory_percent": 0.5, "default_compile_level": 1},
    "fa2": {"max_memory_percent": 0.5},
    "cg_kv1k": {"use_cuda_graph": True, "kv_padding_interval_size": 1024, "q_padding_interval_size": 64,
                "max_memory_percent": 0.5},
    "cg_kv1k_q16": {"use_cuda_graph": True, "kv_padding_interval_size": 1024, "q_padding_interval_size": 16,
                    "max_memory_percent": 0.5},
}


def log(*a):
    print(*a, flush=True)


def run_workload(manager, vocab, n, pin, pout, seed, stream=True):
    """n requests of pin prompt tokens / pout output tokens, all added at once. Returns timings."""
    rng = random.Random(seed)
    inputs = [[rng.randrange(3, vocab) for _ in range(pin)] for _ in range(n)]
    t0 = time.perf_counter()
    rids = []
    for i, x in enumerate(inputs):
        try:
            rids.append(manager.add_request(input_ids=x, request_id=f"w{seed}-{n}-{i}", max_new_tokens=pout,
                                            streaming=stream, eos_token_id=-1))
        except TypeError:
            rids.append(manager.add_request(input_ids=x, request_id=f"w{seed}-{n}-{i}", max_new_tokens=pout,
                                            streaming=stream))
    arrivals = {r: [] for r in rids}
    final = {}
    pending = set(rids)
    shapes = []
    while pending:
        res = manager.get_result(timeout=1.0)
        if res is None:
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("workload timeout")
            continue
        now = time.perf_counter()
        toks = list(res.generated_tokens or [])
        shapes.append(len(toks))
        arrivals[res.request_id].append((now, len(toks)))
        if res.is_finished() if hasattr(res, "is_finished") else str(res.status).endswith("FINISHED"):
            pending.discard(res.request_id)
            final[res.request_id] = toks
    wall = time.perf_counter() - t0
    total = sum(len(v) for v in final.values())
    gaps = []
    for r in rids:
        a = arrivals[r]
        for (t1, n1), (t2, n2) in zip(a, a[1:]):
            if n2 > n1:
                gaps.append((t2 - t1) / (n2 - n1))
    gaps.sort()
    ttft = sorted(arrivals[r][0][0] - t0 for r in rids)
    return {"n": n, "prompt": pin, "out": pout, "wall_s": wall, "tokens": total, "tok_per_s": total / wall,
            "itl_ms_p50": 1e3 * gaps[len(gaps) // 2] if gaps else None,
            "itl_ms_mean": 1e3 * sum(gaps) / len(gaps) if gaps else None,
            "ttft_s_p50": ttft[len(ttft) // 2], "events_first_lengths": shapes[:8],
            "outputs": {r: final[r] for r in rids[:4]}}


def engine_main(name, outdir):
    import torch
    import refserver

    t0 = time.time()
    cfg = {"dtype": "bfloat16", "seed": 0, "weights": "random", "model": {"preset": "llama3-8b"},
           "engine": {"attn_implementation": "paged|flash_attention_2" if name == "fa2" else "paged|sdpa",
                      "cb": CONFIGS[name]}}
    model = refserver.build_model(cfg)
    torch.cuda.synchronize()
    res = {"config": name, "cb": CONFIGS[name], "load_s": time.time() - t0,
           "mem_after_load": torch.cuda.memory_allocated()}
    from transformers import GenerationConfig

    gc = GenerationConfig(max_new_tokens=64, do_sample=False, eos_token_id=-1, pad_token_id=0)
    mgr = model.init_continuous_batching(generation_config=gc, continuous_batching_config=refserver.make_cb_config(
        cfg["engine"]))
    mgr.start()
    vocab = model.config.vocab_size
    t1 = time.time()
    res["warm_b1"] = run_workload(mgr, vocab, 1, 512, 16, 1)
    res["warm_b64"] = run_workload(mgr, vocab, 64, 512, 8, 2)
    res["warmup_s"] = time.time() - t1
    res["b1"] = run_workload(mgr, vocab, 1, 512, 128, 3)
    res["b64"] = run_workload(mgr, vocab, 64, 512, 64, 4)
    res["b64_again"] = run_workload(mgr, vocab, 64, 512, 64, 4)
    res["effective_cb"] = refserver.plain(getattr(mgr, "continuous_batching_config", None))
    res["mem_reserved_peak"] = torch.cuda.max_memory_reserved()
    hook = None
    try:
        import tlhook

        hook = tlhook.current()
    except ImportError:
        pass
    if os.environ.get("EXPLORE_PROFILE"):
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            res["profiled_b16"] = run_workload(mgr, vocab, 16, 512, 16, 5)
        path = os.path.join(outdir, f"trace_{name}{'_hook' if hook else ''}.json")
        p.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
        kern = [e for e in ev if e.get("cat") == "kernel"]
        tot = sum(e.get("dur", 0) for e in kern)
        norm = [e for e in kern if e["name"].startswith("tl_") or "rms" in e["name"].lower()]
        res["profile"] = {"kernels": len(kern), "kernel_us": tot, "tl_kernels": sum(e["name"].startswith("tl_") for e in kern),
                          "tl_us": sum(e.get("dur", 0) for e in kern if e["name"].startswith("tl_")),
                          "names_top": sorted({e["name"][:60] for e in norm})[:10], "trace_bytes": os.path.getsize(path)}
        subprocess.run(["gzip", "-f", path])
    if hook is not None:
        res["hook"] = [{k: o[k] for k in ("mode", "installed", "calls", "served_by", "bypass_suspected")}
                       for o in hook.stats()["overrides"]]
        shapes = hook.stats()["overrides"][0]["shapes"]
        res["hook_shapes_top"] = shapes[:12]
        res["hook_signatures"] = len(shapes)
        json.dump({"format": "transferlab.captured_shapes/v1", "target": hook.stats()["overrides"][0]["target"],
                   "shapes": shapes}, open(os.path.join(outdir, "captured-explore.json"), "w"))
    mgr.stop(block=True, timeout=30)
    for k in ("warm_b1", "warm_b64"):
        res[k].pop("outputs", None)
    res["total_s"] = time.time() - t0
    return res


def kernel_main(outdir):
    import torch
    import importlib.util
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    def load(path):
        sp = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        m = importlib.util.module_from_spec(sp)
        sp.loader.exec_module(m)
        return m

    tk = load(os.path.join(REPO, "configs/kernels/rmsnorm_triton.py"))
    neg = load(os.path.join(REPO, "configs/kernels/rmsnorm_negative_controls.py"))
    out = {"shapes": []}
    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for rows, hidden in [(1, 4096), (8, 4096), (64, 4096), (512, 4096), (4096, 4096), (32768, 4096), (3, 5120),
                         (7, 2048), (5, 4000)]:
        mod = LlamaRMSNorm(hidden, eps=1e-5).cuda().to(torch.bfloat16)
        with torch.no_grad():
            mod.weight.normal_(1.0, 0.1)
        x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16) * 3
        ref_bf = mod(x)
        mod32 = LlamaRMSNorm(hidden, eps=1e-5).cuda()
        with torch.no_grad():
            mod32.weight.copy_(mod.weight.float())
        ref32 = mod32(x.float())
        y = tk.llama_rmsnorm_forward(mod, x)
        r = {"rows": rows, "hidden": hidden, "bitexact_vs_bf16_orig": float((y == ref_bf).float().mean()),
             "maxabs_vs_fp32": float((y.float() - ref32).abs().max()),
             "orig_maxabs_vs_fp32": float((ref_bf.float() - ref32).abs().max())}
        for nm in ("zeros_forward", "partial_forward", "nan_to_finite_forward", "one_hidden_size_forward",
                   "slow_forward"):
            yy = getattr(neg, nm)(mod, x)
            r[nm + "_maxabs"] = float((yy.float() - ref32).abs().nan_to_num(1e9).max())

        def timeit(fn, reps=50):
            xs = [x.clone() for _ in range(4)]
            for i in range(5):
                fn(mod, xs[i % 4])
            ts = []
            for i in range(reps):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(mod, xs[i % 4])
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e))
            ts.sort()
            return ts[len(ts) // 2]

        r["orig_us"] = 1e3 * timeit(lambda m, a: LlamaRMSNorm.forward(m, a))
        r["triton_us"] = 1e3 * timeit(tk.llama_rmsnorm_forward)
        r["slow_us"] = 1e3 * timeit(neg.slow_forward)
        out["shapes"].append(r)
        log("kernel", json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))
    # NaN propagation check
    mod = LlamaRMSNorm(4096, eps=1e-5).cuda().to(torch.bfloat16)
    x = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
    x[1, 7] = float("nan")
    x[2, 9] = float("inf")
    a, b = mod(x), tk.llama_rmsnorm_forward(mod, x)
    out["nan_rows_orig"] = [int(v) for v in (~torch.isfinite(a)).sum(1)]
    out["nan_rows_triton"] = [int(v) for v in (~torch.isfinite(b)).sum(1)]
    # op-level override through torch.library (aten::rms_norm)
    try:
        import tlhook

        man = os.path.join(outdir, "op_manifest.json")
        json.dump({"version": 1, "stats_dir": outdir, "overrides": [{
            "name": "aten_rms", "target": "aten::rms_norm", "mode": "on",
            "candidate": os.path.join(REPO, "configs/kernels/rmsnorm_triton.py") + ":rms_norm_op"}]}, open(man, "w"))
        h = tlhook.Hook(tlhook.load_manifest(man))
        h.install()
        w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
        xx = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
        yy = torch.nn.functional.rms_norm(xx, (4096,), w, 1e-5)
        out["op_override"] = {"calls": h.overrides[0].calls, "installed": h.overrides[0].installed,
                              "maxabs": float((yy.float() - (xx.float() * torch.rsqrt(
                                  xx.float().pow(2).mean(-1, keepdim=True) + 1e-5)) * w.float()).abs().max())}
        cf = torch.compile(lambda a: torch.nn.functional.rms_norm(a, (4096,), w, 1e-5))
        before = dict(h.overrides[0].calls)
        cf(xx)
        cf(xx)
        out["op_override_compiled"] = {"before": before, "after": dict(h.overrides[0].calls)}
    except Exception as e:
        out["op_override_error"] = repr(e)
    log("kernel-extra", json.dumps({k: v for k, v in out.items() if k != "shapes"}))
    return out


def optest_main(outdir):
    """Op-level override through torch.library (aten::rms_norm): counts, correctness, and what
    torch.compile does to it (an inductor decomposition bypasses a CUDA-key override)."""
    import torch
    import tlhook

    out = {}
    man = os.path.join(outdir, "op_manifest.json")
    json.dump({"version": 1, "stats_dir": outdir, "overrides": [{
        "name": "aten_rms", "target": "aten::rms_norm", "mode": "on", "kernel_prefix": "tl_",
        "candidate": os.path.join(REPO, "configs/kernels/rmsnorm_triton.py") + ":rms_norm_op"}]}, open(man, "w"))
    h = tlhook.Hook(tlhook.load_manifest(man))
    h.install()
    o = h.overrides[0]
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.nn.functional.rms_norm(x, (4096,), w, 1e-5)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)) * w.float()
    out["eager"] = {"calls": dict(o.calls), "installed": o.installed, "maxabs_vs_fp32": float((y.float() - ref).abs().max())}
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg = torch.nn.functional.rms_norm(x, (4096,), w, 1e-5)
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    out["cuda_graph"] = {"calls_after_capture_and_2_replays": dict(o.calls),
                         "maxabs_vs_fp32": float((yg.float() - ref).abs().max())}
    before = dict(o.calls)
    try:
        cf = torch.compile(lambda a: torch.nn.functional.rms_norm(a, (4096,), w, 1e-5))
        cf(x)
        cf(x)
        out["compiled"] = {"before": before, "after": dict(o.calls),
                           "bypassed": o.calls == before or o.calls["compiling"] > before["compiling"]}
    except Exception as e:
        out["compiled"] = {"error": repr(e)[:500]}
    return out


def sub(args, outdir, name, env=None, timeout=300):
    t0 = time.time()
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, env=e, capture_output=True, text=True,
                       timeout=timeout)
    with open(os.path.join(outdir, f"log_{name}.txt"), "w") as f:
        f.write(p.stdout[-200000:] + "\n--- stderr ---\n" + p.stderr[-200000:])
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    if res is None:
        res = {"error": f"rc={p.returncode}", "stderr_tail": p.stderr[-1500:]}
    res["elapsed_s"] = time.time() - t0
    return res


def summarize(r):
    if "b1" not in r:
        return {k: r.get(k) for k in ("error", "stderr_tail", "elapsed_s")}
    return {"b1_itl_ms_p50": r["b1"]["itl_ms_p50"], "b1_ttft_s": r["b1"]["ttft_s_p50"],
            "b64_tok_s": r["b64"]["tok_per_s"], "b64_again_tok_s": r["b64_again"]["tok_per_s"],
            "b64_itl_ms_p50": r["b64"]["itl_ms_p50"], "warmup_s": r["warmup_s"], "load_s": r["load_s"],
            "peak_reserved_GiB": r["mem_reserved_peak"] / 2 ** 30, "hook": r.get("hook"),
            "profile": r.get("profile"), "elapsed_s": r.get("elapsed_s"),
            "stream_lengths": r["b1"]["events_first_lengths"]}


def all_main(outdir, budget_s):
    t_start = time.time()
    os.makedirs(outdir, exist_ok=True)
    summary = {}
    if not os.environ.get("EXPLORE_SKIP_KERNEL"):
        summary["kernel"] = sub(["kernel", outdir], outdir, "kernel", timeout=240)
    if os.environ.get("EXPLORE_OPTEST"):
        summary["optest"] = sub(["optest", outdir], outdir, "optest", timeout=120)
        log("== optest", json.dumps(summary["optest"], default=str)[:1500])
    log("== kernel done", round(time.time() - t_start))
    order = os.environ.get("EXPLORE_CONFIGS", "default,cg,cg_async,cg_c1").split(",")
    import importlib.util

    if importlib.util.find_spec("flash_attn") is not None:
        order.append("fa2")
    else:
        summary["flash_attn"] = "not installed: fa2 config (decode fast path) skipped"
    for name in order:
        left = budget_s - (time.time() - t_start)
        if left < 60:
            summary[name] = {"skipped": f"budget: {left:.0f} s left"}
            continue
        env = {"EXPLORE_PROFILE": "1"} if name == order[0] else {}
        r = sub(["engine", name, outdir], outdir, name, env=env, timeout=min(300, left - 60))
        summary[name] = summarize(r)
        json.dump(r, open(os.path.join(outdir, f"engine_{name}.json"), "w"), default=str)
        log("== engine", name, json.dumps(summary[name], default=str))
    # hook under the engine: best CUDA-graph config with the Triton RMSNorm swapped in
    left = budget_s - (time.time() - t_start)
    best = max((n for n in order if isinstance(summary.get(n), dict) and summary[n].get("b64_tok_s")),
               key=lambda n: summary[n]["b64_again_tok_s"], default="cg")
    if left > 60 and not os.environ.get("EXPLORE_SKIP_HOOK"):
        man = os.path.join(outdir, "hook_manifest.json")
        json.dump({"version": 1, "stats_dir": outdir, "overrides": [{
            "name": "rmsnorm_triton", "target": "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward",
            "mode": "on", "kernel_prefix": "tl_", "record_shapes": True,
            "candidate": os.path.join(REPO, "configs/kernels/rmsnorm_triton.py") + ":llama_rmsnorm_forward"}]},
            open(man, "w"))
        env = {"TRANSFERLAB_OVERRIDE_MANIFEST": man, "PYTHONPATH": os.path.join(HERE, "shim") + ":" +
               os.environ.get("PYTHONPATH", ""), "EXPLORE_PROFILE": "1"}
        r = sub(["engine", best, outdir], outdir, "hook_" + best, env=env, timeout=min(300, left - 30))
        summary["hook_" + best] = summarize(r)
        base = json.load(open(os.path.join(outdir, f"engine_{best}.json"))) if os.path.exists(
            os.path.join(outdir, f"engine_{best}.json")) else {}
        if "b64" in r and "b64" in base:
            a, b = base["b64"]["outputs"], r["b64"]["outputs"]
            same = [sum(x == y for x, y in zip(a[k], b[k])) / max(1, len(a[k])) for k in a if k in b]
            summary["hook_" + best]["token_agreement_vs_baseline"] = same
        summary["hook_" + best]["shapes_top"] = r.get("hook_shapes_top")
        json.dump(r, open(os.path.join(outdir, f"engine_hook_{best}.json"), "w"), default=str)
        log("== hook", json.dumps(summary["hook_" + best], default=str)[:3000])
    cap = os.path.join(outdir, "captured-explore.json")
    for cand in ("rmsnorm_triton.py:llama_rmsnorm_forward", "rmsnorm_negative_controls.py:partial_forward",
                 "rmsnorm_negative_controls.py:nan_to_finite_forward"):
        left = budget_s - (time.time() - t_start)
        if left < 60 or not os.path.exists(cap):
            summary["validate_" + cand] = {"skipped": f"{left:.0f} s left or no captured file"}
            continue
        tag = cand.split(":")[1]
        job = os.path.join(outdir, f"job_{tag}.json")
        json.dump({"target": "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward",
                   "candidate": os.path.join(REPO, "configs/kernels", cand), "captured_file": cap,
                   "report": os.path.join(outdir, f"validation_{tag}.json"), "failing_dir": None,
                   "max_shapes": 6}, open(job, "w"))
        t1 = time.time()
        p = subprocess.run([sys.executable, os.path.join(HERE, "validate_gate.py"), job], capture_output=True,
                           text=True, timeout=max(30, left - 20))
        summary["validate_" + tag] = {"rc": p.returncode, "out": p.stdout[-600:], "err": p.stderr[-1500:],
                                      "s": time.time() - t1}
        log("== validate", tag, json.dumps(summary["validate_" + tag])[:2000])
    summary["total_s"] = time.time() - t_start
    json.dump(summary, open(os.path.join(outdir, "summary.json"), "w"), indent=1, default=str)
    return summary


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "engine":
        print("RESULT " + json.dumps(engine_main(sys.argv[2], sys.argv[3]), default=str), flush=True)
    elif cmd == "kernel":
        print("RESULT " + json.dumps(kernel_main(sys.argv[2]), default=str), flush=True)
    elif cmd == "optest":
        print("RESULT " + json.dumps(optest_main(sys.argv[2]), default=str), flush=True)
    elif cmd == "all":
        all_main(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 480)
