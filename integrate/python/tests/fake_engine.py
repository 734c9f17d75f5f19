"""A stand-in for refserver.Engine without torch or a model, for tests of the real request
handling (refserver.make_app): same interface (vocab, manager.is_running(), generate(),
active_s(), done). generate yields tokens_per_step ids per step (100, 101, ...), one step every
step_s seconds; fail_after raises the engine's RuntimeError after that many tokens."""
import asyncio


class FakeManager:
    def __init__(self):
        self.running = True

    def is_running(self):
        return self.running


class FakeEngine:
    def __init__(self, vocab=1000, tokens_per_step=1, fail_after=None, step_s=0.0):
        self.vocab, self.step, self.fail_after, self.step_s = vocab, tokens_per_step, fail_after, step_s
        self.manager = FakeManager()
        self.calls = []
        self.done = 0

    def active_s(self):
        return 0.0

    async def generate(self, ids, max_tokens):
        self.calls.append((list(ids), max_tokens))
        sent = 0
        while sent < max_tokens:
            if self.fail_after is not None and sent >= self.fail_after:
                raise RuntimeError("engine error: out of KV blocks")
            if self.step_s:
                await asyncio.sleep(self.step_s)
            n = min(self.step, max_tokens - sent)
            new = list(range(100 + sent, 100 + sent + n))
            sent += n
            yield new, sent == max_tokens
        self.done += 1
