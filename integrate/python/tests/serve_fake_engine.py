"""The reference server's real HTTP handling (refserver.make_app) around the fake engine, on a
port: what the Go tests launch (integrate.Launch) to check that the Go client reads the server's
streams as the server means them. Needs aiohttp.

  python3 serve_fake_engine.py --host 127.0.0.1 --port N [--tokens-per-step K] [--vocab V]"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import refserver  # noqa: E402
from fake_engine import FakeEngine  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tokens-per-step", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=128256)
    args = ap.parse_args()
    from aiohttp import web

    engine = FakeEngine(vocab=args.vocab, tokens_per_step=args.tokens_per_step, step_s=0.002)
    cfg = {"served_model_name": "transferlab-ref"}
    app = refserver.make_app(engine, cfg, {"server": "transferlab-refserver (fake engine)", "config": cfg})
    web.run_app(app, host=args.host, port=args.port, access_log=None, print=None, handle_signals=True)


if __name__ == "__main__":
    main()
