"""spaCy loaded without torch (ud_assets/decoding/spacy_loading.py): a decoding process never loads
torch for the fast strategy, can still import it (hi_res), and decodes exactly what it decodes
when spaCy's thinc has loaded torch, as it does in bare unstructured."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests import parity_corpus

# Run in a fresh interpreter: whether torch is loaded is a property of the whole process.
DECODE = """
    import json, sys
    if sys.argv[1] == "torch-first":
        import torch  # noqa: F401  (as bare unstructured: spaCy's thinc then loads with torch)
    from ud_assets.decoding import isolation
    from ud_assets.decoding.detect import detect_mime
    from ud_assets.decoding.model import DecoderConfig
    from ud_assets.decoding.partitioning import partition_bytes

    isolation.warm_up()
    import thinc.compat

    state = {"torch_loaded": "torch" in sys.modules, "thinc_has_torch": thinc.compat.has_torch}
    decoded = {}
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        try:
            elements = partition_bytes(data, detect_mime(data, path), DecoderConfig(strategy="fast"), path).elements
            decoded[path] = [
                [e.element_id, e.category, e.text, e.page_number, e.text_as_html, e.category_depth, e.parent_id]
                for e in elements
            ]
        except Exception as exc:
            decoded[path] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({**state, "decoded": decoded}))
    """


def _python(script: str, *args: str, timeout: int = 300) -> str:
    """What a fresh interpreter running script prints (it must succeed)."""
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def _decode(mode: str, paths: list[str]) -> dict:
    return json.loads(_python(DECODE, mode, *paths, timeout=600).strip().splitlines()[-1])


def test_warm_up_leaves_torch_unloaded_and_importable():
    script = """
        import sys
        from ud_assets.decoding import isolation
        isolation.warm_up()
        import thinc.compat
        before = "torch" in sys.modules
        import torch
        print(before, thinc.compat.has_torch, torch.tensor([1, 2]).sum().item())
        """
    assert _python(script).split() == ["False", "False", "3"]


def test_nothing_changes_when_torch_or_thinc_is_already_loaded():
    script = """
        import sys
        import torch
        from ud_assets.decoding.spacy_loading import load_thinc_without_torch
        hid = load_thinc_without_torch()
        import thinc.compat
        print(hid, sys.modules["torch"] is torch, thinc.compat.has_torch)
        """
    assert _python(script).split() == ["False", "True", "True"]


def test_an_environment_that_cannot_load_spacy_is_not_the_documents_fault(monkeypatch):
    from ud_assets.decoding import partitioning
    from ud_assets.decoding.formats import pdf
    from ud_assets.decoding.model import DecodeError, DecoderConfig

    def broken() -> bool:
        raise ImportError("thinc is broken in this environment")

    monkeypatch.setattr(partitioning, "load_thinc_without_torch", broken)
    for call in (
        lambda: partitioning.partition_bytes(b"# Title\n\nText.\n", "text/markdown", DecoderConfig()),
        lambda: pdf.partition_pages(
            partitioning.PARSER,
            b"%PDF-1.4",
            "application/pdf",
            DecoderConfig(),
            None,
            pdf.PdfPlan("fast", [], 1),
            range(1),
        ),
    ):
        with pytest.raises(ImportError, match="thinc is broken") as raised:
            call()
        assert not isinstance(raised.value, DecodeError)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_format_decodes_the_same_with_and_without_torch(tmp_path):
    folder = str(tmp_path)
    paths = [f"{folder}/{name}" for name in parity_corpus.build(folder)]
    without = _decode("as-the-decoder", paths)
    with_torch = _decode("torch-first", paths)
    assert (without["torch_loaded"], without["thinc_has_torch"]) == (False, False)
    assert (with_torch["torch_loaded"], with_torch["thinc_has_torch"]) == (True, True)
    decoded = [path for path, elements in without["decoded"].items() if isinstance(elements, list) and elements]
    assert len(decoded) >= 40, without["decoded"]
    # Narrative text vs titles is spaCy's call (unstructured's text-type rules): it must not move.
    assert without["decoded"] == with_torch["decoded"]
