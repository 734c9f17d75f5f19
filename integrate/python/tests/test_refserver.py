"""Tests of the reference server's request handling (refserver.make_app) on the CPU, without
torch: the HTTP contract the Go client reads (OpenAI-compatible streaming completions, SSE
framing, usage, errors) is served by the real make_app around a fake engine object with the
Engine's interface (fake_engine.py; integrate's TestRealServerContract drives the same pair
from Go). Needs aiohttp
(Debian: python3-aiohttp); skipped, saying so, without it. Run from Go
(integrate/hook_python_test.go) or: python3 -m unittest discover -s integrate/python/tests"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import refserver  # noqa: E402
from fake_engine import FakeEngine  # noqa: E402

try:
    from aiohttp.test_utils import TestClient, TestServer
except ImportError:  # pragma: no cover - CI installs python3-aiohttp
    TestClient = None


def sse_events(body):
    """The data payloads of an SSE body, in order ("[DONE]" kept as a string)."""
    out = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        data = block[len("data: "):]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


@unittest.skipIf(TestClient is None, "aiohttp is not installed (Debian: apt-get install python3-aiohttp): "
                 "the reference server's request handling is not tested")
class CompletionsTest(unittest.IsolatedAsyncioTestCase):
    async def client(self, engine, cfg=None, manifest=None):
        app = refserver.make_app(engine, cfg or {"served_model_name": "ref-test"}, manifest or {"server": "x"})
        c = TestClient(TestServer(app))
        await c.start_server()
        self.addAsyncCleanup(c.close)
        return c

    async def post(self, c, body):
        r = await c.post("/v1/completions", data=body if isinstance(body, str) else json.dumps(body))
        return r, await r.text()

    async def test_stream_with_usage(self):
        eng = FakeEngine()
        c = await self.client(eng)
        r, text = await self.post(c, {"prompt": [5, 6, 7], "max_tokens": 4, "stream": True,
                                      "stream_options": {"include_usage": True}})
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers["Content-Type"].startswith("text/event-stream"))
        ev = sse_events(text)
        self.assertEqual(ev[-1], "[DONE]")
        tokens, usage = ev[:-2], ev[-2]
        self.assertEqual([e["choices"][0]["token_ids"] for e in tokens], [[100], [101], [102], [103]])
        self.assertEqual([e["choices"][0]["finish_reason"] for e in tokens], [None, None, None, "length"])
        self.assertEqual(tokens[0]["choices"][0]["text"], " 100")
        self.assertTrue(all(e["model"] == "ref-test" and e["object"] == "text_completion" for e in tokens))
        self.assertEqual(usage["choices"], [])
        self.assertEqual(usage["usage"], {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
        self.assertEqual(eng.calls, [([5, 6, 7], 4)])

    async def test_stream_multi_token_events_without_usage(self):
        c = await self.client(FakeEngine(tokens_per_step=3))
        _, text = await self.post(c, {"prompt": [1], "max_tokens": 7, "stream": True})
        ev = sse_events(text)
        self.assertEqual(ev[-1], "[DONE]")
        ids = [e["choices"][0]["token_ids"] for e in ev[:-1]]
        self.assertEqual(ids, [[100, 101, 102], [103, 104, 105], [106]])
        self.assertTrue(all("usage" not in e for e in ev[:-1]))

    async def test_not_streamed(self):
        c = await self.client(FakeEngine())
        r, text = await self.post(c, {"prompt": [[9, 9]], "max_tokens": 2})
        self.assertEqual(r.status, 200)
        doc = json.loads(text)
        self.assertEqual(doc["choices"][0]["token_ids"], [100, 101])
        self.assertEqual(doc["choices"][0]["finish_reason"], "length")
        self.assertEqual(doc["usage"], {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4})

    async def test_text_prompt_is_bytes_plus_3(self):
        eng = FakeEngine()
        c = await self.client(eng)
        await self.post(c, {"prompt": "hé", "max_tokens": 1})
        self.assertEqual(eng.calls[0][0], [3 + b for b in "hé".encode()])

    async def test_bad_requests(self):
        eng = FakeEngine(vocab=50)
        c = await self.client(eng)
        cases = [
            ("{not json", "body: invalid JSON"),
            ({"max_tokens": 1}, "prompt: want a non-empty list of token ids or a string"),
            ({"prompt": [], "max_tokens": 1}, "prompt: want a non-empty list"),
            ({"prompt": [1, 50], "max_tokens": 1}, "prompt: token id 50 outside [0, 50)"),
            ({"prompt": [1, -1], "max_tokens": 1}, "token id -1 outside"),
            ({"prompt": [1], "max_tokens": 0}, "max_tokens: want an integer >= 1, got 0"),
            ({"prompt": [1], "max_tokens": "8"}, "max_tokens: want an integer >= 1, got '8'"),
        ]
        for body, want in cases:
            r, text = await self.post(c, body)
            self.assertEqual(r.status, 400, body)
            self.assertIn(want, json.loads(text)["error"]["message"], body)
        self.assertEqual(eng.calls, [])

    async def test_engine_error_mid_stream(self):
        c = await self.client(FakeEngine(fail_after=2))
        r, text = await self.post(c, {"prompt": [1], "max_tokens": 5, "stream": True,
                                      "stream_options": {"include_usage": True}})
        self.assertEqual(r.status, 200)
        ev = sse_events(text)
        self.assertEqual([e["choices"][0]["token_ids"] for e in ev[:2]], [[100], [101]])
        self.assertEqual(ev[2], {"error": {"message": "engine error: out of KV blocks"}})
        self.assertEqual(len(ev), 3, "no usage and no [DONE] after an engine error")

    async def test_engine_error_not_streamed(self):
        c = await self.client(FakeEngine(fail_after=0))
        r, text = await self.post(c, {"prompt": [1], "max_tokens": 5})
        self.assertEqual(r.status, 500)
        self.assertIn("out of KV blocks", json.loads(text)["error"]["message"])

    async def test_models_health_manifest(self):
        eng = FakeEngine()
        c = await self.client(eng, manifest={"server": "transferlab-refserver", "pid": 7})
        r = await c.get("/v1/models")
        self.assertEqual((await r.json())["data"][0]["id"], "ref-test")
        r = await c.get("/health")
        self.assertEqual((r.status, (await r.json())["status"]), (200, "ok"))
        eng.manager.running = False
        r = await c.get("/health")
        self.assertEqual(r.status, 503)
        r = await c.get("/manifest")
        self.assertEqual(await r.json(), {"server": "transferlab-refserver", "pid": 7})

    async def test_profile_stop_without_start(self):
        c = await self.client(FakeEngine())
        r = await c.post("/profile/stop")
        self.assertEqual(r.status, 409)
        self.assertIn("no profile window is open", (await r.json())["error"])


if __name__ == "__main__":
    unittest.main()
