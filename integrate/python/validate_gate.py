"""transferlab validation gate, run on the GPU in the server's own Python environment.

  python3 validate_gate.py JOB.json

JOB.json (written by integrate.ValidationJob):
  {"target": "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward",
   "candidate": "/abs/configs/kernels/rmsnorm_triton.py:llama_rmsnorm_forward",
   "captured_file": "/abs/out/captured-shapes.json",   # from the hook in capture mode
   "shadow_file": "/abs/out/shadow-stats.json" | null, # hook stats of a shadow run, copied in
   "report": "/abs/out/validation.json", "failing_dir": "/abs/out/failing",
   "repeats": 30, "warmup": 5, "max_shapes": 64, "seed": 0}

For every captured signature (most frequent first, up to max_shapes) and for held-out stress
signatures, the candidate is compared with the original function evaluated in float32:

  gate          check (first failing gate, in this order, is the verdict's reason)
  launch        the candidate runs and torch.cuda.synchronize() raises nothing
  shape_dtype   output shape and dtype equal the original's (run in the native dtype)
  all_written   no poisoned element survives: torch.empty*/empty_like are patched during the call
                to return NaN-filled buffers and the cached block is NaN-filled too; inputs are
                finite, so a NaN where the reference is finite is an element never written
  values        |cand - ref32| <= atol + rtol*|ref32| on finite inputs (tlhook.TOLERANCES)
  nan_inf       with NaN, +Inf and -Inf planted in the input, the candidate's non-finite
                elements are exactly the reference's
  deterministic three runs on the same input are bitwise equal

Isolated speedup per captured signature: CUDA events around one call, after warm-up, >= 30
timed repeats, median; before each repeat the L2 (60 MB on the H200) is flushed by writing
256 MiB and the input rotates among 4 copies. s = exp(sum(w_i ln s_i) / sum(w_i)) with w_i the
signature's captured call count (frequency-weighted geometric mean).
"""
import datetime
import importlib
import importlib.util
import json
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "shim"))
import tlhook  # noqa: E402  (only for parse_target/tolerance/describe; no manifest is installed)

GATES = ("launch", "shape_dtype", "all_written", "values", "nan_inf", "deterministic")
REPORT_FORMAT = "transferlab.validation/v1"


def sha256_file(path):
    return tlhook.file_sha256(path)


def resolve_target(target):
    kind = tlhook.parse_target(target)
    if kind[0] != "method":
        raise SystemExit(f"validate: target {target}: only module:Class.method targets are validated in v1")
    _, mod, cls_path, attr = kind
    m = importlib.import_module(mod)
    obj = m
    for p in cls_path:
        obj = getattr(obj, p)
    fn = getattr(obj, attr)
    if getattr(fn, "__tlhook__", None) is not None:
        fn = fn.__wrapped__
    return obj, fn


def load_candidate(spec):
    path, func = tlhook.parse_candidate(spec, os.getcwd())
    sp = importlib.util.spec_from_file_location("tl_validate_candidate", path)
    mod = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(mod)
    return path, getattr(mod, func)


def make_module(cls, attrs, dtype_override=None):
    """An instance of cls holding the captured scalar attributes and random parameters."""
    import torch

    obj = cls.__new__(cls)
    torch.nn.Module.__init__(obj)
    for k, v in attrs.items():
        if isinstance(v, dict) and "shape" in v:
            dt = getattr(torch, dtype_override or v["dtype"])
            t = torch.empty(v["shape"], dtype=dt, device="cuda").normal_(1.0, 0.1)
            setattr(obj, k, torch.nn.Parameter(t, requires_grad=False))
        else:
            setattr(obj, k, v)
    return obj


def make_input(desc, gen, dtype=None):
    import torch

    dt = getattr(torch, dtype or desc["dtype"])
    shape, stride = desc["shape"], desc["stride"]
    t = torch.empty_strided(shape, stride, dtype=dt, device="cuda")
    t.copy_(torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * 3)
    return t


class Poison:
    """Patches torch.empty*/new_empty so buffers allocated inside the candidate start as NaN."""

    def __init__(self):
        import torch

        self.torch = torch
        self.saved = {}

    def __enter__(self):
        torch = self.torch
        nan = float("nan")

        def wrap(fn):
            def poisoned(*a, **k):
                t = fn(*a, **k)
                if t.is_floating_point():
                    t.fill_(nan)
                return t
            return poisoned

        for name in ("empty", "empty_like", "empty_strided"):
            self.saved[name] = getattr(torch, name)
            setattr(torch, name, wrap(self.saved[name]))
        self.saved["new_empty"] = torch.Tensor.new_empty
        torch.Tensor.new_empty = wrap(self.saved["new_empty"])
        return self

    def __exit__(self, *exc):
        torch = self.torch
        for name in ("empty", "empty_like", "empty_strided"):
            setattr(torch, name, self.saved[name])
        torch.Tensor.new_empty = self.saved["new_empty"]
        return False


def signature_inputs(entry):
    """(tensor descriptors of the positional args, module attrs) from a captured entry."""
    return entry["args"], entry.get("module_attrs", {})


def stress_entries(template):
    """Held-out signatures derived from the most frequent captured one."""
    args, attrs = signature_inputs(template)
    x = args[0]
    hidden = x["shape"][-1]
    out = []

    def entry(name, shape, hid, noncontig=False):
        if noncontig:  # rows of a wider buffer: row stride hid+64, unit stride in the last dim
            stride = [0] * len(shape)
            stride[-1] = 1
            acc = hid + 64
            for i in range(len(shape) - 2, -1, -1):
                stride[i] = acc
                acc *= shape[i]
        else:
            stride = [1] * len(shape)
            for i in range(len(shape) - 2, -1, -1):
                stride[i] = stride[i + 1] * shape[i + 1]
        a = dict(x, shape=shape, stride=stride, contiguous=not noncontig)
        at = {k: (dict(v, shape=[hid]) if isinstance(v, dict) and v.get("shape") == [hidden] else v)
              for k, v in attrs.items()}
        return {"name": name, "args": [a] + args[1:], "module_attrs": at, "count": 0}

    lead = [1] * (len(x["shape"]) - 1)
    out.append(entry("batch1_one_token", lead[:-1] + [1, hidden] if lead else [hidden], hidden))
    out.append(entry("long_sequence_32768", lead[:-1] + [32768, hidden] if lead else [hidden], hidden))
    for h in (hidden // 2 + 1, 2 * hidden, 5120, 1000):
        if h != hidden:
            out.append(entry(f"hidden_{h}", lead[:-1] + [17, h] if lead else [h], h))
    out.append(entry("non_contiguous_rows", lead[:-1] + [33, hidden] if lead else [hidden], hidden, noncontig=True))
    return out


def check_one(cls, orig, cand, entry, seed, failing_dir, set_name, idx, save_budget):
    import torch

    args, attrs = signature_inputs(entry)
    res = {"set": set_name, "name": entry.get("name"), "signature": args, "count": entry.get("count", 0),
           "gates": {}}
    gen = torch.Generator(device="cuda").manual_seed(seed + idx)
    mod = make_module(cls, attrs)
    mod32 = make_module(cls, attrs, dtype_override="float32")
    with torch.no_grad():
        for k, p in mod._parameters.items():
            mod32._parameters[k].copy_(p.float())
    x = [make_input(a, gen) if isinstance(a, dict) and "shape" in a else a for a in args]
    x32 = [t.float() if hasattr(t, "float") else t for t in x]
    first_fail = None

    def gate(name, ok, **detail):
        nonlocal first_fail
        res["gates"][name] = {"pass": bool(ok), **detail}
        if not ok and first_fail is None:
            first_fail = name

    def save(name, **tensors):
        if save_budget[name] <= 0 or failing_dir is None:
            return None
        save_budget[name] -= 1
        os.makedirs(failing_dir, exist_ok=True)
        path = os.path.join(failing_dir, f"{name}-{set_name}-{idx}.pt")
        small = {k: (v.detach().cpu() if hasattr(v, "numel") and v.numel() <= (1 << 18) else
                     f"not saved: {tuple(v.shape)} too large") for k, v in tensors.items()}
        torch.save({"signature": args, "module_attrs": attrs, **small}, path)
        return path

    with torch.no_grad():
        ref_native = orig(mod, *x)
        ref32 = orig(mod32, *x32)
        try:
            with Poison():
                out = cand(mod, *x)
            torch.cuda.synchronize()
            gate("launch", True)
        except Exception as e:
            gate("launch", False, error=repr(e), traceback=traceback.format_exc()[-2000:])
            res["first_failing_gate"] = first_fail
            return res
        gate("shape_dtype", tuple(out.shape) == tuple(ref_native.shape) and out.dtype == ref_native.dtype,
             got=[list(out.shape), str(out.dtype)], want=[list(ref_native.shape), str(ref_native.dtype)])
        if res["gates"]["shape_dtype"]["pass"]:
            fin = torch.isfinite(ref32)
            unwritten = int((out.isnan() & fin).sum())
            gate("all_written", unwritten == 0, unwritten=unwritten, numel=out.numel(),
                 method="torch.empty*/new_empty patched to NaN-filled during the call; inputs finite",
                 failing_input=save("all_written", x=x[0], out=out) if unwritten else None)
            rtol, atol = tlhook.tolerance(str(out.dtype))
            c, r = out.double(), ref32.double()
            both = fin & torch.isfinite(c)
            diff = (c - r).abs().where(both, torch.zeros_like(r))
            bad = int((diff > atol + rtol * r.abs()).sum())
            base = (ref_native.double() - r).abs().where(fin, torch.zeros_like(r))
            gate("values", bad == 0, bad=bad, max_abs=float(diff.max()) if diff.numel() else 0.0,
                 max_rel=float((diff / r.abs().clamp_min(atol)).max()) if diff.numel() else 0.0,
                 original_native_max_abs=float(base.max()) if base.numel() else 0.0,
                 original_native_bad=int((base > atol + rtol * r.abs()).sum()), rtol=rtol, atol=atol,
                 failing_input=save("values", x=x[0], out=out, ref32=ref32) if bad else None)
            # NaN/Inf propagation
            xn = [t.clone() if hasattr(t, "clone") else t for t in x]
            flat = xn[0].reshape(-1, xn[0].shape[-1]) if xn[0].is_contiguous() else None
            if flat is not None and flat.shape[0] >= 4:
                flat[1, 3] = float("nan")
                flat[2, 5] = float("inf")
                flat[3, 7] = float("-inf")
                xr = [t.float() if hasattr(t, "float") else t for t in xn]
                rr = orig(mod32, *xr)
                oo = cand(mod, *xn)
                torch.cuda.synchronize()
                mism = int((torch.isfinite(rr) != torch.isfinite(oo)).sum())
                gate("nan_inf", mism == 0, mismatched=mism, reference_nonfinite=int((~torch.isfinite(rr)).sum()),
                     failing_input=save("nan_inf", x=xn[0], out=oo, ref32=rr) if mism else None)
            else:
                res["gates"]["nan_inf"] = {"pass": True, "skipped": "fewer than 4 rows or non-contiguous input"}
            outs = [cand(mod, *x) for _ in range(3)]
            torch.cuda.synchronize()
            same = all(torch.equal(outs[0], o) for o in outs[1:]) and torch.equal(
                outs[0].isnan(), out.isnan()) and torch.equal(outs[0].nan_to_num(), out.nan_to_num())
            gate("deterministic", same)
    res["first_failing_gate"] = first_fail
    return res


def time_one(fn, mod, xs, flush, warmup, repeats, graph=False):
    """Median µs of one call. graph=True captures one call per input copy in a CUDA graph and
    times its replay, as a CUDA-graph server runs it (no Python or launch overhead); eager timing
    includes the launch gaps of the call, which a graph replay does not have."""
    import torch

    for i in range(warmup):
        fn(mod, xs[i % len(xs)])
    torch.cuda.synchronize()
    runs = [lambda x=x: fn(mod, x) for x in xs]
    if graph:
        graphs = []
        for x in xs:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn(mod, x)
            graphs.append(g)
        runs = [g.replay for g in graphs]
    ts = []
    for i in range(repeats):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        runs[i % len(runs)]()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return 1e3 * ts[len(ts) // 2]


def gate_summary(results):
    """Per gate and set (captured, stress): signatures checked, failed, pass, and the first failure's
    name or signature. results are check_one's dicts."""
    gates = {}
    for g in GATES:
        for set_name in ("captured", "stress"):
            rs = [r for r in results if r["set"] == set_name and g in r["gates"]]
            fails = [r for r in rs if not r["gates"][g]["pass"]]
            gates.setdefault(g, {})[set_name] = {"checked": len(rs), "failed": len(fails),
                                                 "pass": not fails,
                                                 "first_failure": (fails[0].get("name") or fails[0]["signature"])
                                                 if fails else None}
    return gates


def first_failure(results):
    """(gate, set, signature) of the verdict's reason: the first failing result of the captured set,
    else of the stress set; None when every gate passed."""
    for set_name in ("captured", "stress"):
        for r in results:
            if r["set"] == set_name and r.get("first_failing_gate"):
                return (r["first_failing_gate"], set_name, r.get("name") or r["signature"])
    return None


def shadow_summary(stats, source):
    """The worst live difference of a shadow run (the hook's stats document) and its call count."""
    ovs = stats.get("overrides", [])
    return {"worst": ovs[0]["shadow"]["worst"] if ovs else None,
            "calls_done": ovs[0]["shadow"]["calls_done"] if ovs else 0, "source": source}


def shadow_fails(shadow):
    """True when a shadow run's worst live call was out of tolerance, had mismatched NaNs, the wrong
    shape or dtype, or raised."""
    w = shadow and shadow["worst"]
    return bool(w and (w["bad"] or w["nan_mismatch"] or not w["shape_dtype_ok"] or w["errors"]))


def weighted_geomean(pairs):
    """exp(sum(w ln s) / sum(w)) over (w, s) pairs: the frequency-weighted geometric mean of
    per-signature speedups; None without weight."""
    den = sum(w for w, _ in pairs)
    if not den:
        return None
    return math.exp(sum(w * math.log(sp) for w, sp in pairs) / den)


def verdict_reason(first):
    """The report's reason for first_failure's tuple (None: a pass)."""
    if first is None:
        return "every gate passed on the captured and stress sets"
    return f"gate {first[0]} failed on the {first[1]} set ({first[2]})"


def versions():
    import torch

    v = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)}
    for m in ("triton", "transformers"):
        try:
            v[m] = __import__(m).__version__
        except Exception as e:
            v[m] = repr(e)
    return v


def main(job_path):
    import torch

    job = json.load(open(job_path))
    t0 = time.time()
    cls, orig = resolve_target(job["target"])
    cand_path, cand = load_candidate(job["candidate"])
    captured = json.load(open(job["captured_file"]))
    entries = sorted(captured["shapes"], key=lambda e: -e["count"])
    total_calls = sum(e["count"] for e in entries)
    max_shapes = int(job.get("max_shapes", 64))
    chosen = entries[:max_shapes]
    seed = int(job.get("seed", 0))
    failing_dir = job.get("failing_dir")
    save_budget = {g: 2 for g in GATES}
    results = []
    for i, e in enumerate(chosen):
        results.append(check_one(cls, orig, cand, e, seed, failing_dir, "captured", i, save_budget))
    stress = stress_entries(entries[0]) if entries else []
    for i, e in enumerate(stress):
        results.append(check_one(cls, orig, cand, e, seed + 1000, failing_dir, "stress", i, save_budget))
    # isolated speedup on captured signatures
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    repeats, warmup = max(30, int(job.get("repeats", 30))), int(job.get("warmup", 5))
    timing = job.get("timing", "graph")
    timed = []  # (captured calls, speedup, eager speedup) per timed signature
    for r, e in zip(results, chosen):
        if r.get("first_failing_gate") == "launch":
            continue
        args, attrs = signature_inputs(e)
        gen = torch.Generator(device="cuda").manual_seed(seed)
        mod = make_module(cls, attrs)
        xs = [make_input(args[0], gen) for _ in range(4)]
        with torch.no_grad():
            r["orig_eager_us"] = time_one(orig, mod, xs, flush, warmup, repeats)
            r["cand_eager_us"] = time_one(cand, mod, xs, flush, warmup, repeats)
            r["speedup_eager"] = r["orig_eager_us"] / r["cand_eager_us"]
            if timing == "graph":
                try:
                    r["orig_us"] = time_one(orig, mod, xs, flush, warmup, repeats, graph=True)
                    r["cand_us"] = time_one(cand, mod, xs, flush, warmup, repeats, graph=True)
                except Exception as ex:  # not capturable: say so, fall back to eager
                    r["graph_error"] = repr(ex)[:300]
                    r["orig_us"], r["cand_us"] = r["orig_eager_us"], r["cand_eager_us"]
            else:
                r["orig_us"], r["cand_us"] = r["orig_eager_us"], r["cand_eager_us"]
        r["speedup"] = r["orig_us"] / r["cand_us"] if r["cand_us"] > 0 else None
        if r["speedup"]:
            timed.append((e["count"], r["speedup"], r["speedup_eager"]))
    gates = gate_summary(results)
    first = first_failure(results)
    covered = sum(e["count"] for e in chosen)
    shadow = None
    if job.get("shadow_file"):
        with open(job["shadow_file"]) as f:
            shadow = shadow_summary(json.load(f), job["shadow_file"])
        if shadow_fails(shadow):
            first = first or ("shadow", "live", "worst live difference out of tolerance")
    report = {
        "format": REPORT_FORMAT, "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "target": job["target"], "candidate": job["candidate"], "candidate_file": cand_path,
        "candidate_sha256": sha256_file(cand_path), "captured_file": job["captured_file"],
        "captured_sha256": sha256_file(job["captured_file"]), "captured_signatures": len(entries),
        "captured_calls": total_calls, "validated_signatures": len(chosen),
        "coverage": covered / total_calls if total_calls else 0.0,
        "verdict": "fail" if first else "pass",
        "reason": verdict_reason(first),
        "failed_gate": first[0] if first else None, "failed_set": first[1] if first else None,
        "gates": gates,
        "tolerances": {k: {"rtol": v[0], "atol": v[1]} for k, v in tlhook.TOLERANCES.items()},
        "tolerance_rule": "|cand - ref| <= atol + rtol*|ref|, ref = original in float32; rtol = 4 ulp of the "
                          "output dtype because a fused kernel may round twice where the reference rounds once; "
                          "values.original_native_* shows the original in its own dtype passes the same rule",
        "speedup": {"s": weighted_geomean([(w, sp) for w, sp, _ in timed]),
                    "s_eager": weighted_geomean([(w, sp) for w, _, sp in timed]), "timing": timing,
                    "method": "frequency-weighted geometric mean of per-signature median CUDA-event speedups; "
                              "timing 'graph' replays one call captured in a CUDA graph (what a CUDA-graph "
                              "server runs: no launch gaps), s_eager times the Python call (launch gaps included)",
                    "repeats": repeats, "warmup": warmup, "l2_flush_bytes": 256 << 20, "input_copies": 4},
        "shadow": shadow, "shapes": results, "environment": versions(), "elapsed_s": time.time() - t0,
    }
    with open(job["report"] + ".tmp", "w") as f:
        json.dump(report, f, indent=1, default=str)
    os.replace(job["report"] + ".tmp", job["report"])
    print(json.dumps({"verdict": report["verdict"], "reason": report["reason"], "s": report["speedup"]["s"],
                      "report": job["report"]}))
    return 0 if report["verdict"] == "pass" else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
