"""Plain-Python tests of the hook (no torch): manifest parsing, lazy patching, counters,
capture of signatures, shadow comparison plumbing, start-up failure. Run from Go
(integrate/hook_python_test.go) or: python3 -m unittest discover -s integrate/python/tests"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(os.path.dirname(HERE), "shim")
sys.path.insert(0, SHIM)
import tlhook  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


class ManifestTest(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        write(os.path.join(self.d, "cand.py"), "def fwd(self, x):\n    return x\n")

    def manifest(self, overrides, **top):
        doc = {"version": 1, "overrides": overrides, **top}
        return write(os.path.join(self.d, "m.json"), json.dumps(doc))

    def test_valid(self):
        m = tlhook.load_manifest(self.manifest([{"target": "pkg.mod:Cls.forward", "candidate": "cand.py:fwd"}]))
        o = m["overrides"][0]
        self.assertEqual(o["mode"], "on")
        self.assertEqual(o["kind"], ("method", "pkg.mod", ["Cls"], "forward"))
        self.assertEqual(o["candidate"], (os.path.join(self.d, "cand.py"), "fwd"))
        self.assertEqual(o["shadow_calls"], tlhook.DEFAULT_SHADOW_CALLS)

    def test_op_target(self):
        self.assertEqual(tlhook.parse_target("aten::rms_norm"), ("op", "aten", "rms_norm", "default"))
        self.assertEqual(tlhook.parse_target("vllm::fused_add_rms_norm.out"),
                         ("op", "vllm", "fused_add_rms_norm", "out"))

    def test_every_problem_reported_with_field(self):
        cases = [
            ({"target": "nocolon", "candidate": "cand.py:fwd"}, "overrides[0].target"),
            ({"target": "m:C.f", "candidate": "cand.py:fwd", "mode": "sometimes"}, "overrides[0].mode"),
            ({"target": "m:C.f", "candidate": "missing.py:fwd"}, "does not exist"),
            ({"target": "m:C.f", "candidate": "cand.py"}, "overrides[0].candidate"),
            ({"target": "m:C.f", "candidate": "cand.py:fwd", "colour": 1}, "overrides[0].colour: unknown field"),
            ({"target": "m:C.f", "candidate": "cand.py:fwd", "shadow_calls": -1}, "overrides[0].shadow_calls"),
            ({"target": "m:C.f", "candidate": "cand.py:fwd", "candidate_sha256": "0" * 64}, "has changed"),
        ]
        for ov, want in cases:
            with self.subTest(want=want):
                with self.assertRaises(tlhook.HookError) as cm:
                    tlhook.load_manifest(self.manifest([ov]))
                self.assertIn(want, str(cm.exception))
                self.assertIn("m.json", str(cm.exception))

    def test_bad_json_names_line(self):
        p = write(os.path.join(self.d, "bad.json"), '{"version": 1,\n "overrides": [}\n')
        with self.assertRaises(tlhook.HookError) as cm:
            tlhook.load_manifest(p)
        self.assertIn("line 2", str(cm.exception))

    def test_mode_off_needs_no_candidate(self):
        m = tlhook.load_manifest(self.manifest([{"target": "m:C.f", "mode": "off"}]))
        self.assertIsNone(m["overrides"][0]["candidate"])


class PatchTest(unittest.TestCase):
    """Runs a child Python with the shim on PYTHONPATH, as a server would be started."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.d, "pkg"))
        write(os.path.join(self.d, "pkg", "__init__.py"), "")
        write(os.path.join(self.d, "pkg", "layers.py"), """
            class Norm:
                scale = 2.0
                def forward(self, x, bias=0):
                    return [v * self.scale + bias for v in x]
        """)
        write(os.path.join(self.d, "cand.py"), """
            def fwd(self, x, bias=0):
                return [v * self.scale + bias + 1000 for v in x]   # recognisably different
        """)

    def run_child(self, overrides, code, extra_env=None):
        man = write(os.path.join(self.d, "m.json"), json.dumps(
            {"version": 1, "stats_dir": os.path.join(self.d, "stats"), "overrides": overrides}))
        env = dict(os.environ, PYTHONPATH=SHIM + os.pathsep + self.d, TRANSFERLAB_OVERRIDE_MANIFEST=man)
        env.pop("TRANSFERLAB_HOOK_TIMINGS", None)
        env.update(extra_env or {})
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=60)

    def test_on_mode_lazy_patch_and_counts(self):
        p = self.run_child([{"name": "n", "target": "pkg.layers:Norm.forward", "candidate": "cand.py:fwd"}], """
            import sys, json, tlhook
            assert "pkg.layers" not in sys.modules          # not imported yet: patch must be lazy
            assert not tlhook.current().overrides[0].installed
            from pkg.layers import Norm
            out = Norm().forward([1, 2], bias=1)
            st = tlhook.stats()["overrides"][0]
            print(json.dumps({"out": out, "calls": st["calls"], "served": st["served_by"], "inst": st["installed"]}))
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(got["out"], [1003.0, 1005.0])  # the candidate served
        self.assertEqual(got["calls"], {"eager": 1, "capture": 0, "compiling": 0})
        self.assertEqual(got["served"], {"candidate": 1, "original": 0})
        self.assertTrue(got["inst"])
        receipts = [f for f in os.listdir(os.path.join(self.d, "stats")) if f.startswith("receipt-")]
        stats = [f for f in os.listdir(os.path.join(self.d, "stats")) if f.startswith("stats-")]
        self.assertEqual(len(receipts), 1)
        self.assertEqual(len(stats), 1, "stats are written at exit")

    def test_capture_records_signatures_and_serves_original(self):
        p = self.run_child([{"target": "pkg.layers:Norm.forward", "candidate": "cand.py:fwd", "mode": "capture"}], """
            import json, tlhook
            from pkg.layers import Norm
            n = Norm()
            outs = [n.forward([1, 2]), n.forward([1, 2]), n.forward([3], bias=5)]
            st = tlhook.stats()["overrides"][0]
            print(json.dumps({"outs": outs, "shapes": st["shapes"]}))
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(got["outs"], [[2.0, 4.0], [2.0, 4.0], [11.0]])
        counts = sorted(s["count"] for s in got["shapes"])
        self.assertEqual(counts, [1, 2])
        self.assertEqual(got["shapes"][0]["count"], 2, "most frequent first")

    def test_missing_module_fails_at_startup(self):
        p = self.run_child([{"target": "no_such_pkg.mod:C.f", "candidate": "cand.py:fwd"}], "print('served')")
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("served", p.stdout)
        self.assertIn("transferlab hook: start-up failed", p.stderr)
        self.assertIn("no_such_pkg", p.stderr)

    def test_missing_method_fails_on_import(self):
        p = self.run_child([{"target": "pkg.layers:Norm.backward", "candidate": "cand.py:fwd"}], """
            import pkg.layers
            print("served")
        """)
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("served", p.stdout)
        self.assertIn("has no method 'backward'", p.stderr)

    def test_require_installed_when_never_imported(self):
        p = self.run_child([{"target": "pkg.layers:Norm.forward", "candidate": "cand.py:fwd"}], """
            import tlhook
            tlhook.current().require_installed()   # imports the target itself
            print(tlhook.current().overrides[0].installed)
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "True")

    def test_off_mode_patches_nothing(self):
        p = self.run_child([{"target": "pkg.layers:Norm.forward", "mode": "off"}], """
            import tlhook
            from pkg.layers import Norm
            print(Norm().forward([1]), getattr(Norm.forward, "__tlhook__", None) is None)
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "[2.0] True")

    def test_no_manifest_is_inert(self):
        env = dict(os.environ, PYTHONPATH=SHIM + os.pathsep + self.d)
        env.pop("TRANSFERLAB_OVERRIDE_MANIFEST", None)
        p = subprocess.run([sys.executable, "-c", "import sys; print('tlhook' in sys.modules)"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout.strip(), "False")

    def test_bootstrap_idempotent(self):
        p = self.run_child([{"target": "pkg.layers:Norm.forward", "candidate": "cand.py:fwd"}], """
            import tlhook
            a = tlhook.current(); b = tlhook.bootstrap()
            from pkg.layers import Norm
            Norm().forward([1])
            print(a is b, tlhook.stats()["overrides"][0]["calls_total"])
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "True 1")


class TimingsWindowTest(unittest.TestCase):
    """The timings document's invariants (HOOK_TIMINGS.md), without CUDA: only capture-phase
    calls (which are counted, not timed) and explicit window closes."""

    def test_windows_sum_to_totals(self):
        d = tempfile.mkdtemp()

        class FakeOv:
            mode = "off"
            spec = {"target": "m:C.f", "candidate_spec": None, "kernel_prefix": ""}
        now = [1_000_000_000]
        t = tlhook.Timings(os.path.join(d, "t.json"), FakeOv(), 10.0, clock=lambda: now[0])
        for _ in range(3):
            t.timed("capture", lambda *a, **k: None, (), {})
        now[0] += 2_000_000_000
        t.close(label="a")
        t.timed("capture", lambda *a, **k: None, (), {})
        now[0] += 1_000_000_000
        t.close(label="b")
        with open(os.path.join(d, "t.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "transferlab.hook_timings/v1")
        self.assertEqual(doc["calls"], 4)
        self.assertEqual(doc["capture_calls"], 4)
        self.assertEqual(doc["calls"], doc["eager_calls"] + doc["capture_calls"])
        self.assertEqual([w["label"] for w in doc["windows"]], ["a", "b"])
        self.assertEqual(sum(w["calls"] for w in doc["windows"]), doc["calls"])
        w0, w1 = doc["windows"]
        self.assertLess(w0["start_unix_ns"], w0["end_unix_ns"])
        self.assertLessEqual(w0["end_unix_ns"], w1["start_unix_ns"])


if __name__ == "__main__":
    unittest.main()
