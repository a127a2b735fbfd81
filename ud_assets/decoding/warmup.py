"""Importing and exercising unstructured's partitioners once per process, so that the children
forked from it start warm (isolation.warm_up runs it, forking nothing meanwhile).

Which partitioner modules a kind needs, and which tiny documents exercise them, the format
families say (formats.warm_modules, formats.warm_documents). A process that decodes one document
imports only what its kind needs; a batch warms its documents' kinds up front (warm_up(kinds)). Only text and a
text-layer PDF are parsed: nothing that runs torch or onnxruntime, whose thread pools (GNU OpenMP
above all) are not fork-safe once used.
"""

from __future__ import annotations

import gc
import importlib
import threading
import time
from collections.abc import Collection
from contextlib import AbstractContextManager, nullcontext

from . import formats
from .model import DecoderConfig
from .partitioning import partition_bytes
from .spacy_loading import load_thinc_without_torch

_warmed: set[str] = set()  # partitioner modules imported (and exercised) in this process
_lock = threading.Lock()


def warm_up(
    kinds: str | Collection[str] | None = None, importing: AbstractContextManager[object] | None = None
) -> float:
    """Import and exercise unstructured's partitioners in this process, once each: those `kinds`
    (one or several) need, or all of them, inside `importing` (isolation's: no fork meanwhile).
    Returns the seconds this call spent (0 when already warm)."""
    names = formats.warm_modules(kinds)
    if all(name in _warmed for name in names):
        return 0.0
    with _lock, importing or nullcontext():
        started = time.perf_counter()
        # The parsers' modules and models are some 400,000 objects that live as long as the process.
        # Each full collection walks all of them (in a batch's step process: 8 during the warm-up,
        # 1.1 s together, and 0.3-0.4 s each later, stopping every thread), so none runs while they
        # load, and after it they are out of the collector's sight (frozen): a full collection then
        # walks only what came after. What the warm-up leaves in cycles is frozen with them: once
        # per kind and process, a few MB at most.
        collecting = gc.isenabled()
        gc.disable()
        try:
            _warm_up([name for name in names if name not in _warmed])
        finally:
            gc.freeze()
            if collecting:
                gc.enable()
        return time.perf_counter() - started


def _warm_up(names: list[str]) -> None:
    load_thinc_without_torch()
    for name in names:
        try:
            importlib.import_module(f"unstructured.partition.{name}")
        except ImportError:
            pass  # an optional extra not installed: that format fails in the child as it would here
    config = DecoderConfig(strategy="fast")
    for kind, document in formats.warm_documents(names):
        partition_bytes(document, kind, config)
    _warmed.update(names)
