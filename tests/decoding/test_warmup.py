"""decoding.warmup: a process warmed once for its kinds, its parsers then out of the collector's way."""

import subprocess
import sys
import textwrap


def _fresh(script: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300, check=True
    )
    return out.stdout.strip().splitlines()


def test_the_parsers_objects_are_frozen_so_a_full_collection_walks_only_what_came_after():
    # Each full collection of a warm step process walked every parser object (0.3-0.4 s each,
    # stopping every thread); frozen, they are skipped, and the collector stays on.
    (line,) = _fresh("""
        import gc
        from ud_assets.decoding import detect, warmup
        assert gc.isenabled()
        warmup.warm_up(detect.HTML)
        print(gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))
    """)
    enabled, frozen, collectable = line.split()
    assert enabled == "True"
    assert int(frozen) > 100_000  # spaCy, unstructured, their imports
    assert int(collectable) * 20 < int(frozen)
