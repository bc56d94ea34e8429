"""Start synergy's DataLoader probe in every Python process of a profiled job.

Python's site module imports the first `sitecustomize` on sys.path at
start-up; `synergy profile` puts this directory first on PYTHONPATH, so this
file runs before the script. It installs the probe (synergy_probe.py beside
it; SYNERGY_PROBE=off skips that), then runs the sitecustomize this one
shadows, if any (Debian ships one in /usr/lib/python3.X), so the job's
interpreter behaves as it would without the probe.
"""

import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.origin is None or os.path.abspath(spec.origin) == os.path.abspath(__file__):
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_synergy_chained_sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # as site.py does for its own sitecustomize
        sys.stderr.write("Error in sitecustomize (%s, run after synergy's probe): %s: %s\n" % (
            spec.origin, type(e).__name__, e))


def _start():
    if os.environ.get("SYNERGY_PROBE", "").strip().lower() in ("off", "0", "false", "no"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import synergy_probe

    synergy_probe.install()


_start()
_chain()
del _start, _chain
