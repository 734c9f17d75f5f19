"""transferlab kernel-override shim: put this directory first on PYTHONPATH.

Does nothing unless TRANSFERLAB_OVERRIDE_MANIFEST names a manifest. Then it installs
the overrides it lists (lazily, when each target module is imported) and fails the
process at start-up, exit status 3, when a target's module cannot be found. Any
other sitecustomize further down sys.path still runs afterwards.
"""
import os
import sys


def _chain_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)


if os.environ.get("TRANSFERLAB_OVERRIDE_MANIFEST"):
    import tlhook

    try:
        tlhook.bootstrap()
    except tlhook.HookError as _e:
        sys.stderr.write(f"transferlab hook: start-up failed, refusing to run: {_e}\n")
        sys.stderr.flush()
        os._exit(3)

try:
    _chain_next_sitecustomize()
except Exception as _e:  # the chained file is someone else's: report, do not hide it
    sys.stderr.write(f"transferlab hook: the next sitecustomize on sys.path raised: {_e!r}\n")
