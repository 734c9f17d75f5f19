"""Plain-Python tests of the validation gate's decision logic (no torch, no GPU): per-gate
summary, the verdict's first failure, the shadow run's verdict, the frequency-weighted speedup
and the held-out stress signatures. The tensor checks themselves (check_one) need torch and a
GPU and are exercised on the GPU machine. Run from Go (integrate/hook_python_test.go) or:
python3 -m unittest discover -s integrate/python/tests"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import validate_gate as vg  # noqa: E402


def result(set_name, name, failing=None, gates=vg.GATES):
    """A check_one-shaped result whose gates pass up to failing, which fails."""
    res = {"set": set_name, "name": name, "signature": [{"shape": [1, 8]}], "gates": {}}
    for g in gates:
        res["gates"][g] = {"pass": g != failing}
        if g == failing:
            break
    res["first_failing_gate"] = failing
    return res


class GateLogicTest(unittest.TestCase):
    def test_all_pass(self):
        rs = [result("captured", "a"), result("captured", "b"), result("stress", "s")]
        self.assertIsNone(vg.first_failure(rs))
        self.assertEqual(vg.verdict_reason(None), "every gate passed on the captured and stress sets")
        g = vg.gate_summary(rs)
        self.assertEqual(list(g), list(vg.GATES))
        self.assertEqual(g["values"]["captured"], {"checked": 2, "failed": 0, "pass": True, "first_failure": None})
        self.assertEqual(g["values"]["stress"]["checked"], 1)

    def test_captured_failure_is_the_reason_before_stress(self):
        rs = [result("stress", "s1", failing="launch"), result("captured", "a"),
              result("captured", "b", failing="values"), result("captured", "c", failing="all_written")]
        first = vg.first_failure(rs)
        self.assertEqual(first, ("values", "captured", "b"))
        self.assertEqual(vg.verdict_reason(first), "gate values failed on the captured set (b)")
        g = vg.gate_summary(rs)
        self.assertEqual(g["values"]["captured"], {"checked": 2, "failed": 1, "pass": False, "first_failure": "b"})
        # a result that stopped at an earlier gate was not checked by the later ones
        self.assertEqual(g["deterministic"]["captured"]["checked"], 1)
        self.assertEqual(g["launch"]["stress"], {"checked": 1, "failed": 1, "pass": False, "first_failure": "s1"})

    def test_stress_failure_and_unnamed_signature(self):
        r = result("stress", None, failing="nan_inf")
        self.assertEqual(vg.first_failure([result("captured", "a"), r]), ("nan_inf", "stress", r["signature"]))

    def test_shadow(self):
        ok = {"bad": 0, "nan_mismatch": 0, "shape_dtype_ok": True, "errors": 0}
        stats = {"overrides": [{"shadow": {"worst": ok, "calls_done": 32}}]}
        s = vg.shadow_summary(stats, "shadow.json")
        self.assertEqual(s, {"worst": ok, "calls_done": 32, "source": "shadow.json"})
        self.assertFalse(vg.shadow_fails(s))
        for k, v in (("bad", 3), ("nan_mismatch", 1), ("shape_dtype_ok", False), ("errors", 2)):
            bad = dict(ok, **{k: v})
            self.assertTrue(vg.shadow_fails(vg.shadow_summary({"overrides": [{"shadow": {"worst": bad, "calls_done": 1}}]}, "x")), k)
        empty = vg.shadow_summary({}, "x")
        self.assertEqual((empty["worst"], empty["calls_done"]), (None, 0))
        self.assertFalse(vg.shadow_fails(empty))
        self.assertFalse(vg.shadow_fails(None))

    def test_weighted_geomean(self):
        self.assertIsNone(vg.weighted_geomean([]))
        self.assertAlmostEqual(vg.weighted_geomean([(5, 2.0)]), 2.0)
        # 3 calls at 4x, 1 call at 0.25x: exp((3 ln 4 + ln 0.25) / 4) = 4 ** 0.5
        self.assertAlmostEqual(vg.weighted_geomean([(3, 4.0), (1, 0.25)]), 2.0)
        self.assertAlmostEqual(vg.weighted_geomean([(1, 2.0), (1, 8.0)]), math.sqrt(16.0))


class StressEntriesTest(unittest.TestCase):
    def test_held_out_signatures(self):
        hidden = 4096
        tmpl = {"args": [{"shape": [1, 37, hidden], "stride": [37 * hidden, hidden, 1], "dtype": "bfloat16",
                          "contiguous": True}],
                "module_attrs": {"weight": {"shape": [hidden], "dtype": "bfloat16"}, "variance_epsilon": 1e-5},
                "count": 100}
        out = vg.stress_entries(tmpl)
        names = [e["name"] for e in out]
        self.assertEqual(names, ["batch1_one_token", "long_sequence_32768", "hidden_2049", "hidden_8192",
                                 "hidden_5120", "hidden_1000", "non_contiguous_rows"])
        by = {e["name"]: e for e in out}
        self.assertEqual(by["batch1_one_token"]["args"][0]["shape"], [1, 1, hidden])
        self.assertEqual(by["long_sequence_32768"]["args"][0]["stride"], [32768 * hidden, hidden, 1])
        h = by["hidden_1000"]
        self.assertEqual(h["args"][0]["shape"], [1, 17, 1000])
        self.assertEqual(h["module_attrs"]["weight"]["shape"], [1000])  # the weight follows the hidden size
        self.assertEqual(h["module_attrs"]["variance_epsilon"], 1e-5)
        nc = by["non_contiguous_rows"]["args"][0]
        self.assertFalse(nc["contiguous"])
        self.assertEqual(nc["stride"], [33 * (hidden + 64), hidden + 64, 1])
        self.assertTrue(all(e["count"] == 0 for e in out))
        self.assertEqual(tmpl["args"][0]["shape"], [1, 37, hidden])  # the template is not modified


if __name__ == "__main__":
    unittest.main()
