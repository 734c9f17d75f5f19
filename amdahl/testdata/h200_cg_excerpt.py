"""Independent check of amdahl's answers on h200_cg_excerpt.json.gz (plain Python, exact integer ns).

Extraction (done once, from the GPU helper's exploration run on the H200, CUDA graphs on,
16 requests x 512 prompt tokens, decode batch 16; source trace_cg.json.gz, PyTorch profiler):
    python3 h200_cg_excerpt.py extract SRC.json.gz h200_cg_excerpt.json.gz
keeps the GPU work between the first kernel of graph replay 921 (the prefill step) and the
last kernel of graph replay 1802 (the first decode step), and the runtime calls they link to.
Check (prints the numbers h200excerpt_test.go asserts; also for h200/profile-c*-excerpt.json.gz):
    python3 h200_cg_excerpt.py check h200_cg_excerpt.json.gz
"""
import gzip
import json
import re
import sys
from decimal import Decimal

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
# eager LlamaRMSNorm.forward: to(fp32), pow, mean, +eps, rsqrt, mul, to(bf16), weight*x
SEQ = [r"direct_copy_kernel", r"pow_tensor_scalar", r"MeanOps", r"CUDAFunctorOnSelf_add<float>", r"rsqrt_kernel",
       r"BinaryFunctor<float, float, float, .*MulFunctor", r"bfloat16_copy_kernel",
       r"BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, .*MulFunctor"]
REPLAYS = (921, 1802)


def ns(x):
    return int((Decimal(repr(x)) * 1000).to_integral_value())


def extract(src, dst):
    d = json.load(gzip.open(src))
    ev = d["traceEvents"]
    gpu = [e for e in ev if e.get("cat") in GPU]
    sel = [e for e in gpu if e["args"].get("correlation") in REPLAYS]
    t0 = min(e["ts"] for e in sel if e["args"]["correlation"] == REPLAYS[0])
    t1 = max(e["ts"] + e["dur"] for e in sel if e["args"]["correlation"] == REPLAYS[1])
    keep = [e for e in gpu if e["ts"] >= t0 and e["ts"] + e["dur"] <= t1]
    corr = {e["args"].get("correlation") for e in keep}
    rt = [e for e in ev if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") in corr]
    out = {k: d[k] for k in ("schemaVersion", "baseTimeNanoseconds", "displayTimeUnit") if k in d}
    out["traceEvents"] = rt + keep
    with gzip.open(dst, "wt") as f:
        json.dump(out, f)


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(u):
    return sum(e - s for s, e in u)


def inter(a, b):
    out, i, j = [], 0, 0
    a, b = union(a), union(b)
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def minus(a, b):
    # a − b on an integer line: a ∩ complement(b)
    ub = union(b)
    comp, cur = [], -(1 << 62)
    for s, e in ub:
        comp.append([cur, s])
        cur = e
    comp.append([cur, 1 << 62])
    return inter(a, comp)


def check(path):
    ev = json.load(gzip.open(path))["traceEvents"]
    rt = {e["args"]["correlation"]: e["name"] for e in ev if e.get("cat") == "cuda_runtime"}
    gpu = [e for e in ev if e.get("cat") in GPU]
    ks = [dict(name=e["name"], cat=e["cat"], stream=e["args"]["stream"], s=ns(e["ts"]), e=ns(e["ts"]) + ns(e["dur"]),
               corr=e["args"].get("correlation"), graph=rt.get(e["args"].get("correlation")) == "cudaGraphLaunch") for e in gpu]
    target = set()
    res = [re.compile(x) for x in SEQ]
    for stream in {k["stream"] for k in ks}:
        lane = sorted([i for i, k in enumerate(ks) if k["cat"] == "kernel" and k["stream"] == stream], key=lambda i: ks[i]["s"])
        i = 0
        while i + len(res) <= len(lane):
            if all(res[j].search(ks[lane[i + j]]["name"]) for j in range(len(res))):
                target.update(lane[i:i + len(res)])
                i += len(res)
            else:
                i += 1
    all_iv = [(k["s"], k["e"]) for k in ks]
    tgt = [(ks[i]["s"], ks[i]["e"]) for i in target]
    oth = [(k["s"], k["e"]) for i, k in enumerate(ks) if i not in target]
    span = [min(s for s, _ in all_iv), max(e for _, e in all_iv)]
    print("gpu events", len(ks), "graph", sum(k["graph"] for k in ks), "target kernels", len(target))
    windows = {"whole": span}
    for c in REPLAYS:
        sel = [(k["s"], k["e"]) for k in ks if k["corr"] == c]
        if sel:
            windows[f"replay {c}"] = [min(s for s, _ in sel), max(e for _, e in sel)]
    for name, w in windows.items():
        W = [w]
        busy, t = length(inter(all_iv, W)), length(inter(tgt, W))
        excl = length(inter(minus(tgt, oth), W))
        print(f"{name}: window {w[0]}..{w[1]} ns ({w[1]-w[0]} ns) busy {busy} target {t} excl {excl}")


if __name__ == "__main__":
    if sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2])
