"""tlhook: transferlab's kernel-override hook, loaded inside the server's Python process.

The manifest (JSON, path in $TRANSFERLAB_OVERRIDE_MANIFEST) is written by the Go side
(integrate.Override); see manifest_schema below. Targets:

  module:Class.method   replace an attribute of a class (a layer's forward), patched when
                        `module` is imported (or at once if it already is)
  ns::op[.overload]     register the candidate for the op's CUDA kernel through torch.library
                        (aten ops and servers' own namespaces), when `module` (default torch)
                        is imported

Modes: off (nothing is patched), capture (original runs; every distinct input signature is
recorded with counts), shadow (original serves; the candidate runs beside it on the first
shadow_calls eager calls and the differences are recorded), on (candidate serves).

Proof that it ran: an install receipt per process, call counters split into eager calls and
calls made while a CUDA graph is being captured (a replayed graph calls no Python at all yet
runs the kernels captured in it), and calls made while torch.compile traces. Stats are
returned by stats() and written to <stats_dir>/stats-<pid>.json at exit and on dump().

This module imports torch only when a target is patched or a counter needs it, so it can be
tested with a Python that has no torch.
"""

import atexit
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import math
import os
import sys
import threading
import time

ENV_MANIFEST = "TRANSFERLAB_OVERRIDE_MANIFEST"
MANIFEST_VERSION = 1
MODES = ("off", "capture", "shadow", "on")
DEFAULT_SHADOW_CALLS = 32
ENV_TIMINGS = "TRANSFERLAB_HOOK_TIMINGS"
ENV_WINDOW_S = "TRANSFERLAB_HOOK_WINDOW_S"
TIMINGS_FORMAT = "transferlab.hook_timings/v1"
MAX_SHAPES = 4096


class HookError(RuntimeError):
    """A manifest or target problem; the message names the file and the field."""


# ---------------------------------------------------------------------------------------------
# manifest


def parse_target(target, where="target"):
    """Returns ("method", module, class_path, attr) or ("op", namespace, op, overload)."""
    if not isinstance(target, str) or not target:
        raise HookError(f"{where}: must be a non-empty string")
    if "::" in target:
        ns, _, rest = target.partition("::")
        op, _, overload = rest.partition(".")
        if not ns or not op or not ns.replace("_", "a").isalnum() or not op.replace("_", "a").isalnum():
            raise HookError(f"{where}: {target!r} is not ns::op[.overload]")
        return ("op", ns, op, overload or "default")
    module, sep, qual = target.partition(":")
    parts = qual.split(".") if qual else []
    if not sep or not module or len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise HookError(f"{where}: {target!r} is not module:Class.method (or ns::op)")
    if not all(p.isidentifier() for p in module.split(".")):
        raise HookError(f"{where}: module {module!r} is not a dotted Python name")
    return ("method", module, parts[:-1], parts[-1])


def parse_candidate(candidate, base_dir, where="candidate"):
    """Returns (absolute file path, function name) from 'file.py:function'."""
    if not isinstance(candidate, str) or ":" not in candidate:
        raise HookError(f"{where}: {candidate!r} is not file.py:function")
    path, _, func = candidate.rpartition(":")
    if not path.endswith(".py") or not func.isidentifier():
        raise HookError(f"{where}: {candidate!r} is not file.py:function")
    if not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return os.path.abspath(path), func


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(path):
    """Reads and checks a manifest; every problem is reported at once, naming the file and field."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise HookError(f"{path}: cannot read manifest: {e}") from e
    except json.JSONDecodeError as e:
        raise HookError(f"{path}: line {e.lineno} column {e.colno}: invalid JSON: {e.msg}") from e
    problems = []
    if not isinstance(raw, dict):
        raise HookError(f"{path}: top level must be an object")
    if raw.get("version") != MANIFEST_VERSION:
        problems.append(f"version: want {MANIFEST_VERSION}, got {raw.get('version')!r}")
    base_dir = os.path.dirname(os.path.abspath(path))
    out = {"path": os.path.abspath(path), "stats_dir": raw.get("stats_dir") or base_dir, "overrides": []}
    ovs = raw.get("overrides")
    if not isinstance(ovs, list):
        problems.append("overrides: must be a list")
        ovs = []
    known = {"name", "target", "candidate", "mode", "shadow_calls", "kernel_prefix", "record_shapes",
             "candidate_sha256", "module", "validation_report", "validation_report_sha256"}
    names = set()
    for i, ov in enumerate(ovs):
        w = f"overrides[{i}]"
        if not isinstance(ov, dict):
            problems.append(f"{w}: must be an object")
            continue
        for k in sorted(set(ov) - known):
            problems.append(f"{w}.{k}: unknown field")
        name = ov.get("name") or f"override{i}"
        if name in names:
            problems.append(f"{w}.name: duplicate name {name!r}")
        names.add(name)
        mode = ov.get("mode", "on")
        if mode not in MODES:
            problems.append(f"{w}.mode: {mode!r} is not one of {', '.join(MODES)}")
        try:
            kind = parse_target(ov.get("target"), f"{w}.target")
        except HookError as e:
            problems.append(str(e))
            kind = None
        cand = None
        if mode in ("shadow", "on") or ov.get("candidate"):
            try:
                cand = parse_candidate(ov.get("candidate"), base_dir, f"{w}.candidate")
                if not os.path.isfile(cand[0]):
                    problems.append(f"{w}.candidate: file {cand[0]} does not exist")
                elif ov.get("candidate_sha256") and file_sha256(cand[0]) != ov["candidate_sha256"]:
                    problems.append(f"{w}.candidate_sha256: {cand[0]} has changed since the manifest was written "
                                    f"(want {ov['candidate_sha256'][:12]}, have {file_sha256(cand[0])[:12]})")
            except HookError as e:
                problems.append(str(e))
        v = ov.get("shadow_calls", DEFAULT_SHADOW_CALLS)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            problems.append(f"{w}.shadow_calls: must be an integer >= 0, got {v!r}")
        out["overrides"].append({
            "name": name, "target": ov.get("target"), "kind": kind, "mode": mode, "candidate": cand,
            "candidate_spec": ov.get("candidate"), "shadow_calls": ov.get("shadow_calls", DEFAULT_SHADOW_CALLS),
            "kernel_prefix": ov.get("kernel_prefix", ""), "record_shapes": bool(ov.get("record_shapes", False)),
            "module": ov.get("module"),
        })
    if problems:
        raise HookError(f"{path}: " + "; ".join(problems))
    return out


# ---------------------------------------------------------------------------------------------
# signatures, tolerances


def describe(x):
    """A JSON-able description of one argument (tensors by shape/dtype/strides/contiguity)."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "stride"):
        return {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", ""), "stride": list(x.stride()),
                "contiguous": bool(x.is_contiguous()), "device": str(getattr(x.device, "type", x.device))}
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, (list, tuple)):
        return [describe(v) for v in x]
    return type(x).__name__


def module_attrs(obj):
    """Scalar attributes and parameter shapes of a bound module (e.g. variance_epsilon, weight)."""
    out = {}
    for k, v in getattr(obj, "__dict__", {}).items():
        if k.startswith("_"):
            continue
        if isinstance(v, (bool, int, float, str)):
            out[k] = v
    for k, v in getattr(obj, "_parameters", {}).items():
        if v is not None:
            out[k] = describe(v)
    return out


# Tolerances for comparing a candidate with the original evaluated in float32/float64:
# |cand - ref| <= atol + rtol*|ref|. rtol is 4 units in the last place of the output dtype
# (bf16: 2^-8 spacing at 1 -> 2^-6; fp16: 2^-11 -> 2^-9; fp32: 2^-24 -> ~1e-6 with slack for
# reduction order), because a fused kernel may round twice where the reference rounds once.
# atol covers values near zero, where relative error means nothing.
TOLERANCES = {
    "bfloat16": (2.0 ** -6, 1e-3),
    "float16": (2.0 ** -9, 1e-4),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}


def tolerance(dtype_name):
    return TOLERANCES.get(dtype_name.replace("torch.", ""), (1e-2, 1e-2))


def compare(cand, ref):
    """Differences between a candidate output and a reference (both tensors); float64 on device."""
    import torch

    d = {"shape_dtype_ok": tuple(cand.shape) == tuple(ref.shape) and cand.dtype == ref.dtype}
    if tuple(cand.shape) != tuple(ref.shape):
        d.update(max_abs=math.inf, max_rel=math.inf, bad=-1, nan_mismatch=-1)
        return d
    rtol, atol = tolerance(str(ref.dtype))
    c, r = cand.double(), ref.double()
    rn, cn = ~torch.isfinite(r), ~torch.isfinite(c)
    nan_mismatch = int((rn != cn).sum()) + int(((rn & cn) & ~((r.isnan() & c.isnan()) | (r == c))).sum())
    both = ~rn & ~cn
    diff = (c - r).abs().where(both, torch.zeros_like(r))
    bad = int((diff > atol + rtol * r.abs()).sum())
    d.update(max_abs=float(diff.max()) if diff.numel() else 0.0,
             max_rel=float((diff / r.abs().clamp_min(atol)).max()) if diff.numel() else 0.0,
             bad=bad, nan_mismatch=nan_mismatch, rtol=rtol, atol=atol)
    return d


PROFILE_RANGE = "transferlab::target"


def _profiler_range():
    """A record_function range named transferlab::target while a torch profiler is active (so a
    Chrome trace can attribute the target's kernels in eager mode; kernels replayed from a CUDA
    graph are not linked to any range), else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.autograd.profiler._is_profiler_enabled:
            return None
        return torch.profiler.record_function(PROFILE_RANGE)
    except AttributeError:
        return None


# ---------------------------------------------------------------------------------------------
# hook timings (amdahl/HOOK_TIMINGS.md, format transferlab.hook_timings/v1)


def _counts():
    return {"calls": 0, "eager_calls": 0, "capture_calls": 0, "timed_calls": 0, "gpu_time_ms": 0.0}


class Timings:
    """CUDA-event timing of every eager call of one override's target, in windows of wall time.

    A window closes every window_s seconds (checked at the next eager call, in the thread that
    serves, so never while a CUDA graph is being captured), on request (close_requested) and at
    exit; each close rewrites the whole file atomically. Calls during CUDA-graph capture are
    counted, not timed; a replayed graph calls no Python and is invisible here."""

    def __init__(self, path, override, window_s, clock=time.time_ns, active_wall_s=None):
        self.path = path
        self.ov = override
        self.window_s = window_s
        self.clock = clock
        self.active_wall_s = active_wall_s  # callable -> cumulative seconds with >= 1 request in flight
        self.lock = threading.Lock()
        self.windows = []
        self.close_label = None
        self._open(self.clock())

    def _open(self, start_ns):
        self.cur = {"label": f"w{len(self.windows)}", "start_unix_ns": start_ns, **_counts(), "pending": [],
                    "active0": self.active_wall_s() if self.active_wall_s else None}

    def timed(self, phase, fn, full, kwargs):
        with self.lock:
            w = self.cur
            w["calls"] += 1
            w["eager_calls" if phase != "capture" else "capture_calls"] += 1
        if phase != "eager":
            return fn(*full, **kwargs)
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn(*full, **kwargs)
        end.record()
        with self.lock:
            w["pending"].append((start, end))
        return out

    def request_close(self, label):
        with self.lock:
            self.close_label = label or f"w{len(self.windows)}"

    def maybe_close(self):
        now = self.clock()
        with self.lock:
            due = self.close_label is not None or now - self.cur["start_unix_ns"] >= self.window_s * 1e9
        if due:
            self.close(now)

    def close(self, now=None, label=None):
        """Closes the current window (synchronising on its events) and rewrites the file."""
        now = self.clock() if now is None else now
        with self.lock:
            w = self.cur
            if label or self.close_label:
                w["label"] = label or self.close_label
            self.close_label = None
            self._open(max(now, w["start_unix_ns"] + 1))
        pend = w.pop("pending")
        for start, end in pend:
            end.synchronize()
            w["gpu_time_ms"] += start.elapsed_time(end)
        w["timed_calls"] = len(pend)
        w["end_unix_ns"] = max(now, w["start_unix_ns"] + 1)
        a0 = w.pop("active0")
        w["active_wall_ms"] = None if a0 is None else min(
            1e3 * (self.active_wall_s() - a0), (w["end_unix_ns"] - w["start_unix_ns"]) / 1e6)
        w["gpu_busy_ms"] = None
        with self.lock:
            self.windows.append(w)
        self.write()

    def document(self):
        with self.lock:
            ws = [dict(w) for w in self.windows]
        tot = _counts()
        for w in ws:
            for k in tot:
                tot[k] += w[k]
        ov = self.ov
        dev = None
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                dev = torch.cuda.get_device_name()
            except Exception:
                dev = None
        return {"format": TIMINGS_FORMAT, "target": ov.spec["target"], "mode": ov.mode,
                "candidate": ov.spec["candidate_spec"] or "" if ov.mode in ("on", "shadow") else "",
                "kernel_prefix": ov.spec["kernel_prefix"], "pid": os.getpid(), "device": dev,
                "timing": "cuda_event", **tot, "windows": ws}

    def write(self):
        doc = self.document()
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
            os.replace(tmp, self.path)
        except OSError as e:
            sys.stderr.write(f"transferlab hook: cannot write hook timings {self.path}: {e}\n")
        return doc


# ---------------------------------------------------------------------------------------------
# one override


class Override:
    def __init__(self, spec, hook):
        self.spec = spec
        self.hook = hook
        self.name = spec["name"]
        self.mode = spec["mode"]
        self.lock = threading.Lock()
        self.installed = False
        self.install_error = None
        self.installed_at = None
        self.original = None
        self.candidate = None
        self.candidate_sha256 = None
        self.calls = {"eager": 0, "capture": 0, "compiling": 0}
        self.served_by = {"candidate": 0, "original": 0}
        self.shapes = {}
        self.shadow_done = 0
        self.shadow_worst = None
        self.shadow_records = []
        self.timings = None  # Timings when $TRANSFERLAB_HOOK_TIMINGS names a file
        self._lib = None

    # -- loading

    def load_candidate(self):
        if self.spec["candidate"] is None or self.mode == "off":
            return None
        path, func = self.spec["candidate"]
        self.candidate_sha256 = file_sha256(path)
        modname = "tl_candidate_" + self.candidate_sha256[:16]
        mod = sys.modules.get(modname)
        if mod is None:
            sp = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(sp)
            sys.modules[modname] = mod
            sp.loader.exec_module(mod)
        fn = getattr(mod, func, None)
        if not callable(fn):
            raise HookError(f"override {self.name}: candidate {path} has no function {func!r}")
        return fn

    # -- the call path

    def phase(self):
        torch = sys.modules.get("torch")
        if torch is None:
            return "eager"
        try:
            if torch.compiler.is_compiling():
                return "compiling"
        except AttributeError:
            pass
        try:
            if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                return "capture"
        except RuntimeError:
            pass
        return "eager"

    def record_shape(self, phase, args, kwargs, bound_self):
        desc = [describe(a) for a in args] + [{k: describe(v)} for k, v in sorted(kwargs.items())]
        key = json.dumps(desc, sort_keys=True)
        ent = self.shapes.get(key)
        if ent is None:
            if len(self.shapes) >= MAX_SHAPES:
                self.hook.note(f"override {self.name}: more than {MAX_SHAPES} distinct signatures; further ones not kept")
                return key
            ent = {"args": desc, "count": 0, "by_phase": {}}
            if bound_self is not None:
                ent["module_attrs"] = module_attrs(bound_self)
            self.shapes[key] = ent
        ent["count"] += 1
        ent["by_phase"][phase] = ent["by_phase"].get(phase, 0) + 1
        return key

    def call(self, bound_self, args, kwargs):
        """Dispatches one call of the target. args excludes bound_self for method targets."""
        ph = self.phase()
        full = (bound_self,) + tuple(args) if bound_self is not None else tuple(args)
        fn = self.candidate if self.mode == "on" else self.original
        if ph == "compiling":
            # torch.compile is tracing: keep this path free of locks and I/O so Dynamo can trace it;
            # the count is of traces, not of executions (a compiled graph calls no Python).
            self.calls["compiling"] += 1
            return fn(*full, **kwargs)
        tm = self.timings
        if tm is not None and ph == "eager":
            tm.maybe_close()  # closes a due window here, in the serving thread, never during capture
        with self.lock:
            self.calls[ph] += 1
            key = self.record_shape(ph, args, kwargs, bound_self) if self.mode in ("capture", "shadow") or \
                self.spec["record_shapes"] else None
            do_shadow = self.mode == "shadow" and ph == "eager" and self.shadow_done < self.spec["shadow_calls"]
            if do_shadow:
                self.shadow_done += 1
        rng = _profiler_range()
        if rng is not None:
            with rng:
                out = tm.timed(ph, fn, full, kwargs) if tm is not None else fn(*full, **kwargs)
        elif tm is not None:
            out = tm.timed(ph, fn, full, kwargs)
        else:
            out = fn(*full, **kwargs)
        with self.lock:
            self.served_by["candidate" if self.mode == "on" else "original"] += 1
        if do_shadow:
            self.shadow(full, kwargs, out, key)
        return out

    def shadow(self, full, kwargs, out, key):
        try:
            cand = self.candidate(*full, **kwargs)
            d = compare(cand, out)
            err = None
        except Exception as e:  # a candidate that raises is a finding, not a server crash
            d, err = {"shape_dtype_ok": False, "max_abs": math.inf, "max_rel": math.inf, "bad": -1,
                      "nan_mismatch": -1}, repr(e)
        rec = {"call": self.shadow_done, "signature": key, "error": err, **d}
        with self.lock:
            self.shadow_records.append(rec)
            w = self.shadow_worst or {"max_abs": 0.0, "max_rel": 0.0, "bad": 0, "nan_mismatch": 0,
                                      "shape_dtype_ok": True, "errors": 0, "calls": 0}
            w["calls"] += 1
            w["max_abs"] = max(w["max_abs"], d["max_abs"])
            w["max_rel"] = max(w["max_rel"], d["max_rel"])
            w["bad"] = max(w["bad"], d["bad"]) if d["bad"] >= 0 else w["bad"] + 1
            w["nan_mismatch"] = max(w["nan_mismatch"], d["nan_mismatch"])
            w["shape_dtype_ok"] = w["shape_dtype_ok"] and d["shape_dtype_ok"]
            w["errors"] += err is not None
            self.shadow_worst = w

    # -- installing

    def install_method(self, module):
        _, modname, class_path, attr = self.spec["kind"]
        obj = module
        for part in class_path:
            obj = getattr(obj, part, None)
            if obj is None:
                raise HookError(f"override {self.name}: target {self.spec['target']}: {modname} has no "
                                f"{'.'.join(class_path)}")
        orig = obj.__dict__.get(attr) if hasattr(obj, "__dict__") else None
        if orig is None:
            orig = getattr(obj, attr, None)
        if orig is None or not callable(orig):
            raise HookError(f"override {self.name}: target {self.spec['target']}: {'.'.join(class_path)} has no "
                            f"method {attr!r}")
        if getattr(orig, "__tlhook__", None) is not None:
            return  # already patched in this process
        self.original = orig
        self.candidate = self.load_candidate()
        ov = self

        def wrapper(self_, *args, **kwargs):
            return ov.call(self_, args, kwargs)

        wrapper.__tlhook__ = self
        wrapper.__name__ = getattr(orig, "__name__", attr)
        wrapper.__qualname__ = getattr(orig, "__qualname__", attr)
        wrapper.__doc__ = getattr(orig, "__doc__", None)
        wrapper.__wrapped__ = orig
        setattr(obj, attr, wrapper)

    def install_op(self):
        import torch

        _, ns, op, overload = self.spec["kind"]
        qual = f"{ns}::{op}"
        packet = getattr(getattr(torch.ops, ns), op, None)
        if packet is None:
            raise HookError(f"override {self.name}: op {qual} is not registered (is its extension loaded?)")
        if self.mode in ("capture", "shadow"):
            get_kernel = getattr(torch.library, "get_kernel", None)
            if get_kernel is None:
                raise HookError(f"override {self.name}: mode {self.mode} on an op target needs "
                                "torch.library.get_kernel (torch >= 2.9) to call the original")
            k = get_kernel(qual if overload == "default" else f"{qual}.{overload}", "CUDA")
            self.original = k.call_boxed if hasattr(k, "call_boxed") else k
        else:
            self.original = None
        self.candidate = self.load_candidate()
        ov = self
        lib = torch.library.Library(ns, "IMPL")

        def impl(*args, **kwargs):
            return ov.call(None, args, kwargs)

        name = op if overload == "default" else f"{op}.{overload}"
        lib.impl(name, impl, "CUDA")
        self._lib = lib  # keeps the registration alive

    def install(self, module=None):
        if self.installed or not self.hook.wants(self):
            return
        try:
            if self.spec["kind"][0] == "method":
                self.install_method(module)
            else:
                self.install_op()
            self.installed = True
            self.installed_at = time.time()
            if self.hook.timings_path:
                self.timings = Timings(self.hook.timings_file(self), self, self.hook.window_s,
                                       active_wall_s=self.hook.active_clock)
        except HookError as e:
            self.install_error = str(e)
            raise
        except Exception as e:
            self.install_error = f"override {self.name}: install failed: {e!r}"
            raise HookError(self.install_error) from e
        finally:
            self.hook.write_receipt()

    def target_module(self):
        k = self.spec["kind"]
        if k[0] == "method":
            return k[1]
        return self.spec.get("module") or "torch"

    def stats(self):
        with self.lock:
            total = sum(self.calls.values())
            return {
                "name": self.name, "target": self.spec["target"], "mode": self.mode,
                "candidate": self.spec["candidate_spec"], "candidate_sha256": self.candidate_sha256,
                "kernel_prefix": self.spec["kernel_prefix"], "installed": self.installed,
                "installed_at": self.installed_at, "install_error": self.install_error,
                "calls": dict(self.calls), "calls_total": total, "served_by": dict(self.served_by),
                "shapes": sorted(self.shapes.values(), key=lambda e: -e["count"]),
                "shadow": {"calls_requested": self.spec["shadow_calls"], "calls_done": self.shadow_done,
                           "worst": self.shadow_worst, "records": self.shadow_records[:256]},
                "timings_file": self.timings.path if self.timings else None,
                "note_graph_replay": "calls counted here are Python-level; a replayed CUDA graph calls no Python "
                                     "yet runs the kernels captured during its 'capture' calls",
                "bypass_suspected": self.installed and self.mode == "on" and total > 0 and
                self.calls["compiling"] == total,
            }


# ---------------------------------------------------------------------------------------------
# the per-process hook


class _Finder(importlib.abc.MetaPathFinder):
    """Patches targets right after their module executes (lazy install)."""

    def __init__(self, hook):
        self.hook = hook

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.hook.pending_modules():
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        hook = self.hook

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec_):
                return loader.create_module(spec_)

            def exec_module(self, module):
                loader.exec_module(module)
                hook.module_loaded(fullname, module)

            def __getattr__(self, name):
                return getattr(loader, name)

        spec.loader = _Loader()
        return spec


class Hook:
    def __init__(self, manifest):
        self.manifest = manifest
        self.overrides = [Override(s, self) for s in manifest["overrides"]]
        self.notes = []
        self.lock = threading.Lock()
        self.started_at = time.time()
        self.finder = None
        self.timings_path = os.environ.get(ENV_TIMINGS) or None
        try:
            self.window_s = float(os.environ.get(ENV_WINDOW_S) or 10.0)
        except ValueError as e:
            raise HookError(f"${ENV_WINDOW_S}: {os.environ.get(ENV_WINDOW_S)!r} is not a number of seconds") from e
        if not self.window_s > 0:
            raise HookError(f"${ENV_WINDOW_S}: must be > 0, got {self.window_s}")
        self.active_clock = None

    def wants(self, o):
        """An override is installed when it changes something (mode != off) or when timing is asked for."""
        return o.mode != "off" or self.timings_path is not None

    def timings_file(self, o):
        """The timings path; a worker process (one with a multiprocessing parent) adds .<pid>
        before .json (HOOK_TIMINGS.md), and overrides after the first add .<name>."""
        root, ext = os.path.splitext(self.timings_path)
        ext = ext or ".json"
        i = self.overrides.index(o)
        if i > 0:
            root = f"{root}.{o.name}"
        try:
            import multiprocessing

            if multiprocessing.parent_process() is not None:
                root = f"{root}.{os.getpid()}"
        except (ImportError, AttributeError):
            pass
        return root + ext

    def set_active_clock(self, fn):
        """fn() -> cumulative seconds with >= 1 request in flight; fills windows' active_wall_ms."""
        self.active_clock = fn
        for o in self.overrides:
            if o.timings is not None:
                o.timings.active_wall_s = fn

    def close_window(self, label=None, wait_s=1.0):
        """Asks the serving thread to close the timing window at its next call; closes it here if
        no call came within wait_s (the server is idle, so no CUDA graph is being captured)."""
        ts = [o.timings for o in self.overrides if o.timings is not None]
        n0 = [len(t.windows) for t in ts]
        for t in ts:
            t.request_close(label)
        deadline = time.time() + wait_s
        while time.time() < deadline and any(len(t.windows) == n for t, n in zip(ts, n0)):
            time.sleep(0.01)
        for t, n in zip(ts, n0):
            if len(t.windows) == n:
                t.close(label=label)
        return [t.document() for t in ts]

    def note(self, msg):
        with self.lock:
            if len(self.notes) < 100:
                self.notes.append(msg)

    def active(self):
        return [o for o in self.overrides if self.wants(o)]

    def pending_modules(self):
        return {o.target_module() for o in self.active() if not o.installed and o.install_error is None}

    def module_loaded(self, name, module):
        for o in self.active():
            if o.target_module() == name and not o.installed:
                o.install(module)

    def check_targets_exist(self):
        """Fails at start-up when a target's module cannot be found at all."""
        for o in self.active():
            name = o.target_module()
            if name in sys.modules:
                continue
            try:
                found = importlib.util.find_spec(name)
            except (ImportError, ValueError) as e:
                found = None
                err = e
            else:
                err = None
            if found is None:
                o.install_error = (f"override {o.name}: target {o.spec['target']}: module {name!r} not found"
                                   + (f" ({err})" if err else "") + f" for {sys.executable}")
                self.write_receipt()
                raise HookError(o.install_error)

    def install(self):
        self.check_targets_exist()
        self.finder = _Finder(self)
        sys.meta_path.insert(0, self.finder)
        for o in self.active():
            mod = sys.modules.get(o.target_module())
            if mod is not None:
                o.install(mod)
        self.write_receipt()
        atexit.register(self.dump)

    def require_installed(self):
        """Raises HookError unless every active override is installed (servers call this once ready)."""
        missing = [o for o in self.active() if not o.installed]
        for o in missing:
            mod = o.target_module()
            if mod not in sys.modules and o.install_error is None:
                try:
                    o.install(importlib.import_module(mod))
                except ImportError as e:
                    raise HookError(f"override {o.name}: target module {mod} failed to import: {e}") from e
        missing = [o for o in self.active() if not o.installed]
        if missing:
            raise HookError("; ".join(o.install_error or f"override {o.name}: target {o.spec['target']} "
                                      "never imported" for o in missing))

    def receipt(self):
        return {
            "pid": os.getpid(), "argv": sys.argv, "python": sys.executable, "manifest": self.manifest["path"],
            "started_at": self.started_at,
            "overrides": [{"name": o.name, "target": o.spec["target"], "mode": o.mode,
                           "candidate": o.spec["candidate_spec"], "candidate_sha256": o.candidate_sha256,
                           "installed": o.installed, "installed_at": o.installed_at, "error": o.install_error}
                          for o in self.overrides],
        }

    def _write(self, name, obj):
        d = self.manifest["stats_dir"]
        try:
            os.makedirs(d, exist_ok=True)
            tmp = os.path.join(d, f".{name}.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=1, default=str)
            os.replace(tmp, os.path.join(d, name))
        except OSError as e:
            sys.stderr.write(f"transferlab hook: cannot write {name} in {d}: {e}\n")

    def write_receipt(self):
        self._write(f"receipt-{os.getpid()}.json", self.receipt())

    def stats(self):
        return {"receipt": self.receipt(), "overrides": [o.stats() for o in self.overrides],
                "notes": list(self.notes)}

    def dump(self):
        """Closes the last timing window (once) and writes stats-<pid>.json; runs at exit."""
        last, self.dumped = getattr(self, "dumped", False), True
        for o in self.overrides:
            if o.timings is not None and not last:
                try:
                    o.timings.close(label="exit")
                except Exception as e:
                    sys.stderr.write(f"transferlab hook: closing the last timing window failed: {e!r}\n")
        st = self.stats()
        self._write(f"stats-{os.getpid()}.json", st)
        return st


_state = {"hook": None}
_state_lock = threading.Lock()


def bootstrap(manifest_path=None):
    """Installs the overrides of the manifest named by $TRANSFERLAB_OVERRIDE_MANIFEST (idempotent).

    Returns the Hook, or None when no manifest is named."""
    path = manifest_path or os.environ.get(ENV_MANIFEST)
    if not path:
        return None
    with _state_lock:
        if _state["hook"] is not None:
            return _state["hook"]
        hook = Hook(load_manifest(path))
        _state["hook"] = hook
    hook.install()
    return hook


def current():
    """The process's Hook, or None."""
    return _state["hook"]


def stats():
    h = _state["hook"]
    return h.stats() if h is not None else {"receipt": None, "overrides": [], "notes": ["no override manifest"]}
