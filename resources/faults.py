"""Kill points for crash tests: a hook on the librarian's storage calls, off unless UD_FAULTS is set.

A crash test wants a server (or the run's own process) to die at an exact point of a stage, say
right after the sections stage stored its second object, not after a guessed sleep. With
UD_FAULTS set in a process's environment, every LibrarianService it opens counts its storage
calls by the stage that made them, and when an armed kill point is reached it acts:

    {"stage": "sections", "nth": 2}                 after the stage's 2nd write
    {"stage": "document", "nth": 1, "reads": true}  after its 1st storage call of any kind
Either way the event is written to the file UD_FAULTS names, then:
    "action": "kill"   SIGKILL this process (the run's own process dies mid-stage);
    "action": "pause"  wait until the file is removed: the test kills a server meanwhile, then
                       lets the run go on against it.

A kill point is armed with arm() (a test's child process, once per document) or by UD_FAULTS_ARM
(the same JSON, read once at start). A stage is known from the call stack (the first frame of one
of ud_assets/processing's stage modules), or, for the objects put_children writes from its pool
threads, from the stage that called put_children (or, called from a thread of no stage, from
the type of the children it stores). With UD_FAULTS unset nothing is wrapped: the
cost is one environment lookup when this module is imported.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from resources.model import CHUNK, IMAGE, PAGE, SECTION

ENABLED = bool(os.environ.get("UD_FAULTS"))

# The stages, by the module of ud_assets/processing that runs each.
STAGE_MODULES = {
    "ud_assets.processing.document": "document",
    "ud_assets.processing.elements": "elements",
    "ud_assets.processing.sections": "sections",
    "ud_assets.processing.images": "images",
    "ud_assets.processing.provenance": "provenance_triples",
    "ud_assets.processing.chunks": "chunks",
}
# The calls that change what is stored, by part of the librarian; every other call reads.
WRITES = {
    "objects": {"put", "delete"},
    "documents": {
        "insert",
        "upsert_many",
        "register_many",
        "delete",
        "log_event",
        "put_record",
        "put_records",
        "delete_records",
        "put_processing",
        "delete_processing",
    },
    "triples": {"insert", "delete_subjects", "write_object_rows"},
}
# The stage that stores each type of child document: for put_children called outside a stage's
# own thread (the chunks stage stores its children from a pool thread of its own).
CHILD_STAGES = {PAGE: "sections", SECTION: "sections", IMAGE: "images", CHUNK: "chunks"}
PAUSE_LIMIT_S = 600.0

_lock = threading.Lock()
_armed: dict[str, Any] | None = json.loads(os.environ["UD_FAULTS_ARM"]) if os.environ.get("UD_FAULTS_ARM") else None
_seen = 0
_pool_stage: dict[object, str] = {}  # object id -> the stage whose put_children writes it
_thread = threading.local()  # .stage: the stage of the put_children this thread is in
fired: list[dict[str, Any]] = []  # the kill points reached in this process
# The subjects of each triple insert since the kill point was armed, by stage: the event carries
# them, so a test can tell whose quads a write carried (resources/grouped_inserts.py writes several
# documents' at once).
_inserts: dict[str, list[list[str]]] = {}


def arm(point: dict[str, Any] | None) -> None:
    """The next kill point (None: none); its count starts now."""
    global _armed, _seen
    with _lock:
        _armed, _seen = point, 0
        _inserts.clear()


def current_stage() -> str:
    stage: str = getattr(_thread, "stage", "")
    if stage:
        return stage
    frame = sys._getframe(1)
    while frame is not None:
        stage = STAGE_MODULES.get(frame.f_globals.get("__name__", ""), "")
        if stage:
            return stage
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def _observe(part: str, method: str, args: tuple) -> None:
    global _armed
    point = _armed
    if point is None:
        return
    write = method in WRITES[part]
    if not (write or point.get("reads")):
        return
    stage = _pool_stage.get(args[0], "") if part == "objects" and args else ""
    stage = stage or current_stage()
    if part == "triples" and method == "insert" and args and isinstance(args[0], list):
        with _lock:
            _inserts.setdefault(stage, []).append(sorted({quad.s for quad in args[0]}))
    if stage != point["stage"] or (point.get("part") and point["part"] != part):
        return
    global _seen
    with _lock:
        if _armed is not point:
            return
        _seen += 1
        if _seen < int(point.get("nth", 1)):
            return
        _armed = None
    with _lock:
        inserts = {stage_name: list(subjects) for stage_name, subjects in _inserts.items()}
    event = {**point, "part_called": part, "method": method, "pid": os.getpid(), "triple_inserts": inserts}
    fired.append(event)
    path = os.environ["UD_FAULTS"]
    with open(path + ".tmp", "w") as f:
        json.dump(event, f)
    os.replace(path + ".tmp", path)
    if point.get("action", "pause") == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


class _Watched:
    """One part of a librarian (objects, documents, triples) whose calls are observed after they return."""

    def __init__(self, part: str, target: object):
        self._part, self._target = part, target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value) or name.startswith("_"):
            return value
        part = self._part

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            _observe(part, name, args)
            return result

        return call


def instrument(librarian: Any) -> None:
    """Wrap a LibrarianService's parts so that kill points can fire (only when ENABLED)."""
    for part in ("objects", "documents", "triples"):
        setattr(librarian, part, _Watched(part, getattr(librarian, part)))
    put_children = librarian.put_children

    def put_children_of_stage(children: Any, *args: Any, **kwargs: Any) -> Any:
        children = list(children)
        stage = current_stage() or (CHILD_STAGES.get(children[0].document_type, "") if children else "")
        for child in children:
            _pool_stage[librarian._child_object_id(child.id)] = stage
        outer, _thread.stage = getattr(_thread, "stage", ""), stage
        try:
            return put_children(children, *args, **kwargs)
        finally:
            _thread.stage = outer

    librarian.put_children = put_children_of_stage
