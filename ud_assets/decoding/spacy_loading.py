"""Load spaCy without torch: torch costs a decoding process 3 s and 490 MB it never uses.

unstructured's text-type rules load spaCy's `en_core_web_sm`, and spaCy's `thinc` imports torch at
import time whenever torch is installed, only to offer PyTorch-backed layers. The small English
pipeline has none (its layers run on numpy), and the fast strategy never touches torch. torch is
installed all the same, for `hi_res` (unstructured-inference loads it when a layout model runs).

So thinc is imported once with torch hidden from it, and torch stays importable for whatever asks
for it later. Measured on this 2-core machine (fresh interpreter, alternated, 3 runs each):
`isolation.warm_up()` 9.1-9.4 s and 995 MB peak RSS with torch, 5.7-5.8 s and 510 MB without;
every child forked from the warm parent inherits the smaller image. While thinc imports, another
thread's `import torch` would fail: the decoder imports torch only for hi_res, after this has run.
"""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()


def load_thinc_without_torch() -> bool:
    """Import thinc with torch hidden, unless thinc or torch is already loaded (then nothing
    changes: spaCy behaves the same either way for the pipelines the decoder loads).

    Returns True when this call hid torch from thinc. Call it before anything imports
    unstructured's partitioners; calling it again is free."""
    if "thinc" in sys.modules or "torch" in sys.modules:
        return False
    with _lock:
        if "thinc" in sys.modules or "torch" in sys.modules:
            return False
        sys.modules["torch"] = None  # type: ignore[assignment]  # an import of torch now raises ImportError
        try:
            import thinc.compat  # noqa: F401  (records has_torch = False)
        finally:
            # Only the None placeholder goes: a thinc import that failed leaves nothing behind,
            # and a later `import torch` (hi_res) loads the real one.
            if sys.modules.get("torch", object()) is None:
                del sys.modules["torch"]
        return True
