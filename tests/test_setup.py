"""The environment `make setup` builds, as a fresh process uses it."""

import json
import os
import subprocess
import sys

# Run in a fresh interpreter that may not write bytecode (PYTHONDONTWRITEBYTECODE, as on this
# machine and in most container images): which modules it loaded from source with no compiled
# file beside them, i.e. that it compiled again, as every run worker and `ud` command would.
_PROBE = r"""
import importlib.util, json, os, sys
import dagster
from ud_assets.decoding.warmup import warm_up
warm_up("application/pdf")
site = [p for p in sys.path if p.endswith("site-packages")]
loaded = [m.__file__ for m in list(sys.modules.values()) if (getattr(m, "__file__", None) or "").endswith(".py")]
installed = [f for f in loaded if any(f.startswith(s) for s in site)]
uncompiled = [f for f in installed if not os.path.exists(importlib.util.cache_from_source(f))]
print(json.dumps({"installed": len(installed), "uncompiled": uncompiled[:20], "uncompiled_count": len(uncompiled)}))
"""


def test_a_fresh_process_finds_the_installed_packages_compiled():
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "DO_NOT_TRACK": "true"}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    # unstructured's PDF path and Dagster load over a thousand modules: without bytecode they are
    # compiled from source in every fresh process (about 6 s here).
    assert found["installed"] > 1000
    assert found["uncompiled_count"] == 0, found["uncompiled"]
