"""processing.parse_ahead.ParseAhead: a batch's documents parsed side by side, handed back as they finish."""

import pytest

from tests import docgen
from ud_assets.decoding import detect, ids
from ud_assets.decoding.model import DecoderConfig
from ud_assets.decoding.partitioning import unstructured_version
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing.parse_ahead import ParseAhead
from ud_assets.processing.runner import process_document

CONFIG = DecoderConfig()


@pytest.fixture
def lib(tmp_path):
    return LibrarianResource(backend="embedded", home=str(tmp_path / "ud"), workspace="default").get()


def test_largest_documents_start_first(lib):
    lib.add_document("small", detect.MARKDOWN, docgen.markdown(), title="small.md")
    lib.add_document("large", detect.PDF, docgen.long_pdf(), title="large.pdf")
    lib.add_document("middle", detect.PDF, docgen.pdf_text(3), title="middle.pdf")
    ahead = ParseAhead(lib, CONFIG, unstructured_version(), workers=2)
    try:
        assert ahead.largest_first(["small", "large", "middle", "missing"]) == ["large", "middle", "small", "missing"]
    finally:
        ahead.close()


def test_documents_come_back_as_their_parses_finish_each_once(lib):
    lib.add_document("large", detect.PDF, docgen.long_pdf(), title="large.pdf")
    for n in range(4):
        lib.add_document(f"note-{n}", detect.MARKDOWN, docgen.markdown() + f"\n\nNote {n}.\n".encode(), title=f"{n}.md")
    keys = ["note-0", "note-1", "large", "note-2", "note-3"]
    version = unstructured_version()
    ahead = ParseAhead(lib, CONFIG, version, workers=2, lookahead=1)
    order = []
    try:
        for key in ahead.in_completion_order(keys):
            order.append(key)
            assert len(ahead._futures) <= ahead.window  # bounded: parsed documents waiting in memory
            fingerprint = ids.fingerprint(lib.get_metadata(key).sha256, version, CONFIG, lib.get_metadata(key).kind)
            parsed = ahead.take(key, fingerprint)
            assert parsed is not None and parsed.elements, key  # its elements, parsed in the background
    finally:
        ahead.close()
    assert sorted(order) == sorted(keys)
    # The large PDF started first, yet the notes parsed beside it are stored before it ends.
    assert order[-1] == "large"


def test_a_parse_for_another_generation_or_an_up_to_date_document_is_not_used(lib):
    lib.add_document("doc", detect.MARKDOWN, docgen.markdown(), title="doc.md")
    version = unstructured_version()
    fingerprint = ids.fingerprint(lib.get_metadata("doc").sha256, version, CONFIG, detect.MARKDOWN)
    ahead = ParseAhead(lib, CONFIG, version)
    try:
        ahead.submit("doc")
        assert ahead.take("doc", "another-generation") is None
        assert ahead.take("doc", fingerprint) is None  # taken once only
        process_document(lib, "doc", CONFIG, version=version)
        ahead.submit("doc")  # now current: nothing to parse
        assert ahead.take("doc", fingerprint) is None
    finally:
        ahead.close()


def test_a_current_document_is_looked_at_once_per_batch(lib, monkeypatch):
    """Parse-ahead finds the generation current and complete; the runner takes that verdict rather
    than reading the same rows, object and triples again. A generation parse-ahead did not find
    current is still looked at by the runner."""
    from ud_assets.processing import generations

    keys = [f"note-{n}" for n in range(3)]
    for n, key in enumerate(keys):
        lib.add_document(key, detect.MARKDOWN, docgen.markdown() + f"\n\nNote {n}.\n".encode(), title=f"{key}.md")
        process_document(lib, key, CONFIG)
    looked: list[str] = []
    real_problems = generations.problems
    monkeypatch.setattr(
        generations,
        "problems",
        lambda librarian, document_id, g: looked.append(document_id) or real_problems(librarian, document_id, g),
    )
    ahead = ParseAhead(lib, CONFIG, unstructured_version(), workers=2)
    try:
        for key in ahead.in_completion_order(keys):
            assert process_document(lib, key, CONFIG, ahead=ahead).skipped
            ahead.release(key)
    finally:
        ahead.close()
    assert sorted(looked) == keys  # once each, by parse-ahead
    assert process_document(lib, "note-0", CONFIG).skipped  # no batch: the runner looks itself
    assert sorted(looked) == sorted([*keys, "note-0"])


def test_a_batch_reads_each_documents_row_generation_and_ledger_entry_once(lib, monkeypatch):
    """The runner opens a document's attempt from what parse-ahead read for its parse (row, head,
    generation, ledger entry) instead of reading them again; the batch's rows are one read for all
    of them, their generations and ledger entries one read each; without a batch a document reads
    them itself."""
    from collections import Counter

    keys = [f"note-{n}" for n in range(3)]
    for n, key in enumerate(keys):
        lib.add_document(key, detect.MARKDOWN, docgen.markdown() + f"\n\nNote {n}.\n".encode(), title=f"{key}.md")
    reads: Counter = Counter()
    for name in ("get_metadata", "get_generation", "get_failure"):
        real = getattr(lib, name)
        monkeypatch.setattr(lib, name, lambda key, real=real, name=name: reads.update([(name, key)]) or real(key))
    for name in ("get_metadata_many", "get_generations", "get_failures"):
        many = getattr(lib, name)
        monkeypatch.setattr(
            lib, name, lambda ids, many=many, name=name: reads.update([(name, tuple(ids))]) or many(ids)
        )
    ahead = ParseAhead(lib, CONFIG, unstructured_version(), workers=2)
    try:
        for key in ahead.in_completion_order(keys):
            outcome = process_document(lib, key, CONFIG, ahead=ahead)
            assert outcome.results["elements"].elements and not outcome.skipped  # parsed ahead, stored
            ahead.release(key)
    finally:
        ahead.close()
    assert {(name, key): n for (name, key), n in reads.items() if n != 1} == {}
    assert reads.pop(("get_metadata_many", tuple(keys))) == 1  # the batch's rows: one read
    # Their generations and ledger entries: one read of each for the documents next in line.
    assert {name for name, _ in reads} == {"get_generations", "get_failures"}
    assert sorted(key for _, ids in reads for key in ids) == sorted([*keys, *keys])
    reads.clear()
    lib.add_document("alone", detect.MARKDOWN, docgen.markdown(), title="alone.md")
    process_document(lib, "alone", CONFIG)
    assert set(reads) == {("get_metadata", "alone"), ("get_generation", "alone"), ("get_failure", "alone")}


def test_a_batch_detects_each_documents_kind_once(lib, monkeypatch):
    """The kind parse-ahead detected for the parse is the attempt's: the same head and row give the
    same kind, and libmagic is not asked twice. Without a batch the attempt detects it itself."""
    keys = [f"note-{n}" for n in range(3)]
    for n, key in enumerate(keys):
        lib.add_document(key, detect.MARKDOWN, docgen.markdown() + f"\n\nNote {n}.\n".encode(), title=f"{key}.md")
    asked: list[str | None] = []
    real = detect.detect_mime
    monkeypatch.setattr(
        detect, "detect_mime", lambda data, *a, **k: asked.append(a[0] if a else None) or real(data, *a, **k)
    )
    ahead = ParseAhead(lib, CONFIG, unstructured_version(), workers=2)
    try:
        for key in ahead.in_completion_order(keys):
            outcome = process_document(lib, key, CONFIG, ahead=ahead)
            assert outcome.results["document"].metadata["mime_type"] == detect.MARKDOWN
            ahead.release(key)
    finally:
        ahead.close()
    assert sorted(asked) == sorted(f"{key}.md" for key in keys)  # once each, for the parse
    asked.clear()
    lib.add_document("alone", detect.MARKDOWN, docgen.markdown(), title="alone.md")
    assert process_document(lib, "alone", CONFIG).results["document"].metadata["mime_type"] == detect.MARKDOWN
    assert asked == ["alone.md"]


def test_a_batch_of_web_pages_warms_their_parsers_and_not_every_formats(tmp_path):
    """A sensor's batch of new uploads waits for its kinds' parsers only (PDF's import alone is
    4-5 s); a kind the rows do not declare is imported by the parse that meets it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import sys
        from tests import docgen
        from ud_assets.decoding import detect, warmup
        from ud_assets.decoding.model import DecoderConfig
        from ud_assets.decoding.partitioning import unstructured_version
        from ud_assets.defs.resources import LibrarianResource
        from ud_assets.processing.parse_ahead import ParseAhead

        lib = LibrarianResource(backend="embedded", home={str(tmp_path / "ud")!r}, workspace="default").get()
        lib.add_document("page", detect.HTML, b"<html><body><h1>Page</h1><p>Words of a page.</p></body></html>", title="p.html")
        lib.add_document("note", detect.MARKDOWN, docgen.markdown(), title="n.md")
        ahead = ParseAhead(lib, DecoderConfig(), unstructured_version(), workers=2)
        try:
            done = list(ahead.in_completion_order(["page", "note"]))
            print(sorted(done))
        finally:
            ahead.close()
        print(sorted(warmup._warmed), "unstructured.partition.pdf" in sys.modules, "docx" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    lines = out.stdout.strip().splitlines()[-2:]
    assert lines == ["['note', 'page']", "['html', 'md', 'text'] False False"], out.stderr[-2000:]
