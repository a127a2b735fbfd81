import itertools
import random
import re
import string

import pytest

from ud_assets.decoding import ids
from ud_assets.decoding import provenance as p
from ud_assets.decoding.chunking import (
    Chunk,
    chunk_activity_iri,
    chunk_generation,
    chunk_id,
    chunk_text,
    chunk_triples,
)

PARAMETERS = [(2000, 100), (300, 40), (120, 0), (64, 16), (17, 8), (10, 1), (3, 2), (1, 0)]
TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
ROW = re.compile(r"<tr>.*?</tr>", re.DOTALL)


def _word(rng: random.Random) -> str:
    # Mostly short words, now and then a very long one.
    length = rng.randint(1, 12) if rng.random() < 0.97 else rng.randint(20, 400)
    return "".join(rng.choice(string.ascii_letters + string.digits + ".,;") for _ in range(length))


def _table(rng: random.Random, rows: int, cells: int) -> str:
    def cell() -> str:
        return " ".join(_word(rng) for _ in range(rng.randint(1, 3)))

    body = "".join("<tr>" + "".join(f"<td>{cell()}</td>" for _ in range(cells)) + "</tr>" for _ in range(rows))
    return f"<table>{body}</table>"


def _text(rng: random.Random) -> str:
    """Paragraphs of lines of words, irregular spacing and blank lines, sometimes tables."""
    parts = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.15:
            parts.append(_table(rng, rng.randint(1, 8), rng.randint(1, 4)))
            continue
        lines = [
            rng.choice([" ", " ", " ", "  ", "\t"]).join(_word(rng) for _ in range(rng.randint(1, 25)))
            for _ in range(rng.randint(1, 6))
        ]
        parts.append("\n".join(lines) + rng.choice(["", "", " ", "\n"]))
    return rng.choice(["", "\n", "  "]) + rng.choice(["\n\n", "\n\n", "\n\n\n"]).join(parts)


def _check(text: str, chunks: list[Chunk], size: int, overlap: int) -> None:
    assert [c.index for c in chunks] == list(range(1, len(chunks) + 1))
    covered = bytearray(len(text))
    for c in chunks:
        assert text[c.offset : c.offset + c.length] == c.text
        assert c.length == len(c.text) and 0 < c.length <= size
        assert c.text == c.text.strip()
        covered[c.offset : c.offset + c.length] = b"\x01" * c.length
    for previous, following in itertools.pairwise(chunks):
        assert previous.offset < following.offset
        assert previous.offset + previous.length < following.offset + following.length
        assert previous.offset + previous.length - following.offset <= overlap
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
    for table in TABLE.finditer(text):
        if table.end() - table.start() <= size:
            # A table that fits is in a chunk as a whole, or not at all.
            for c in chunks:
                inside = c.offset <= table.start() and table.end() <= c.offset + c.length
                disjoint = c.offset + c.length <= table.start() or table.end() <= c.offset
                assert inside or disjoint, (table.group(), c)
        elif max(map(len, ROW.findall(table.group()))) + len("\n\n\n<table>") < size:
            # A table too long for a chunk, with rows that fit (with the table tag and the blank
            # lines before it): it is only ever cut between two rows.
            edges = {e for c in chunks for e in (c.offset, c.offset + c.length) if table.start() < e < table.end()}
            assert all(text[:e].endswith("</tr>") and text.startswith("<tr>", e) for e in edges)


@pytest.mark.parametrize("size,overlap", PARAMETERS)
def test_offsets_sizes_overlap_coverage_and_tables_hold_for_generated_texts(size, overlap):
    rng = random.Random(size * 1000 + overlap)
    for _ in range(40 if size > 2 else 8):
        text = _text(rng)
        _check(text, chunk_text(text, size, overlap), size, overlap)


def test_consecutive_chunks_overlap_when_pieces_fit_in_the_overlap():
    rng = random.Random(11)
    text = " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 8))) for _ in range(500))
    chunks = chunk_text(text, 100, 20)
    _check(text, chunks, 100, 20)
    # Pieces are " word" (at most 9 characters): popping stops as soon as at most 20 are left,
    # so more than 11 remain, less the stripped leading space.
    overlaps = [a.offset + a.length - b.offset for a, b in itertools.pairwise(chunks)]
    assert len(chunks) > 10 and all(11 <= o <= 20 for o in overlaps)


def test_defaults_are_upstream_2000_and_100():
    rng = random.Random(7)
    text = "\n\n".join(_text(rng) for _ in range(20))
    chunks = chunk_text(text)
    _check(text, chunks, 2000, 100)
    assert len(chunks) > 3 and max(c.length for c in chunks) > 1500


def test_same_texts_as_langchain_on_its_own_example():
    # LangChain's test_iterative_text_splitter: RecursiveCharacterTextSplitter(chunk_size=10, chunk_overlap=1).
    text = (
        "Hi.\n\nI'm Harrison.\n\nHow? Are? You?\nOkay then f f f f.\n"
        "This is a weird text to write, but gotta test the splittingggg some how.\n\nBye!\n\n-H."
    )
    chunks = chunk_text(text, 10, 1)
    assert [c.text for c in chunks] == [
        "Hi.", "I'm", "Harrison.", "How? Are?", "You?", "Okay then", "f f f f.", "This is a", "weird",
        "text to", "write,", "but gotta", "test the", "splitting", "gggg", "some how.", "Bye!", "-H.",
    ]  # fmt: skip
    _check(text, chunks, 10, 1)
    # The character overlap: "splitting" keeps its last "g" for the next chunk (whole pieces of <= 1 char).
    assert chunks[14].offset == chunks[13].offset + chunks[13].length - 1


def test_overlap_is_made_of_whole_pieces_with_their_leading_separator():
    # Pieces are "foo", " bar", " baz", " 123": with overlap 3 no piece fits in the overlap
    # (" bar" is 4 characters), with size 8 and overlap 4 one does. Worked out on LangChain's merge.
    chunks = chunk_text("foo bar baz 123", 7, 3)
    assert [(c.offset, c.text) for c in chunks] == [(0, "foo bar"), (8, "baz"), (12, "123")]
    assert [(c.offset, c.text) for c in chunk_text("foo bar baz 123", 8, 4)] == [
        (0, "foo bar"), (4, "bar baz"), (8, "baz 123"),
    ]  # fmt: skip
    # LangChain's start_index example (chunk_size=6, chunk_overlap=0).
    assert [c.offset for c in chunk_text("w1 w1 w1 w1 w1 w1 w1 w1 w1", 6, 0)] == [0, 6, 12, 18, 24]


def test_a_chunk_inside_its_neighbour_is_dropped():
    # Pieces "ab", " x", " ": LangChain emits "ab x", keeps " x" as overlap, adds " " and emits
    # " x " stripped to "x", text the previous chunk already has.
    assert [(c.offset, c.text) for c in chunk_text("ab x ", 4, 2)] == [(0, "ab x")]
    assert [c.text for c in chunk_text("ab x y", 4, 2)] == ["ab x", "x y"]


def test_offsets_are_exact_for_repeated_text():
    # Finding chunk strings again in the text would place all three at 0.
    chunks = chunk_text("same para\n\nsame para\n\nsame para", 12, 0)
    assert [(c.offset, c.length) for c in chunks] == [(0, 9), (11, 9), (22, 9)]
    assert {c.text for c in chunks} == {"same para"}


def test_words_without_separators_are_split_by_characters():
    chunks = chunk_text("x" * 50, 10, 3)
    assert [(c.offset, c.length) for c in chunks] == [(k * 7, 10) for k in range(6)] + [(42, 8)]
    # The long piece is " yyy…" (its separator leads), so the first character chunk is " " + 9 "y".
    text = "short words then " + "y" * 25 + " and more"
    chunks = chunk_text(text, 10, 0)
    _check(text, chunks, 10, 0)
    assert [c.text for c in chunks if c.text.startswith("y")] == ["y" * 9, "y" * 10, "y" * 6]


def test_paragraphs_come_before_lines_and_lines_before_words():
    text = "first paragraph line one\nline two\n\nsecond paragraph"
    assert [c.text for c in chunk_text(text, 40, 0)] == ["first paragraph line one\nline two", "second paragraph"]
    assert [c.text for c in chunk_text(text, 30, 0)] == ["first paragraph line one", "line two", "second paragraph"]


def test_a_table_that_fits_is_never_cut():
    table = "<table><tr><td>alpha beta</td><td>gamma</td></tr>\n<tr><td>delta epsilon</td><td>zeta</td></tr></table>"
    text = "An introduction of some words.\n\n" + table + "\n\nA conclusion of some words."
    for size in range(len(table), len(table) + 40):
        chunks = chunk_text(text, size, 10)
        _check(text, chunks, size, 10)
        assert sum(c.text.count(table) for c in chunks) >= 1
    # Without the protection the "\n\n" before it makes the piece too long, and it is cut at its "\n".
    plain = text.replace("<table>", "<tabxe>").replace("</table>", "</tabxe>")
    assert not any("<tabxe>" in c.text and "</tabxe>" in c.text for c in chunk_text(plain, len(table), 10))


def test_an_oversize_table_is_split_at_row_boundaries():
    rng = random.Random(3)

    def cells() -> str:
        return "".join(f"<td>{rng.randint(0, 10**6)} {_word(rng)[:10]}</td>" for _ in range(3))

    rows = [f"<tr>{cells()}</tr>" for _ in range(12)]
    table = "<table>" + "".join(rows) + "</table>"
    text = "Before the table.\n\n" + table + "\n\nAfter the table."
    start, end = text.index("<table>"), text.index("</table>") + len("</table>")
    for size, overlap in [(150, 0), (200, 60), (260, 100)]:
        assert max(map(len, rows)) < size < len(table)
        chunks = chunk_text(text, size, overlap)
        _check(text, chunks, size, overlap)
        for c in chunks:
            if start < c.offset < end:
                assert text.startswith("<tr>", c.offset) and text[: c.offset].endswith("</tr>")
            if start < c.offset + c.length < end:
                assert text[: c.offset + c.length].endswith("</tr>")
        assert all(any(row in c.text for c in chunks) for row in rows)
        # The table's own tags stay with its first and last rows.
        assert any(c.text.startswith("<table>" + rows[0]) for c in chunks)
        assert any(c.text.endswith(rows[-1] + "</table>") for c in chunks)


@pytest.mark.parametrize("text", ["", " ", "\n\n", " \t\n \n\n  "])
def test_empty_and_whitespace_text_has_no_chunks(text):
    assert chunk_text(text, 10, 2) == []


@pytest.mark.parametrize("size,overlap", [(0, 0), (-5, 0), (10, -1), (10, 10), (10, 11)])
def test_invalid_parameters_are_rejected(size, overlap):
    with pytest.raises(ValueError, match="chunk_"):
        chunk_text("some text", size, overlap)


def test_chunk_ids_are_deterministic_and_distinct():
    section, generation = "urn:section:1", "g" * 32
    first = chunk_id(section, generation, 1)
    assert first == chunk_id(section, generation, 1) == ids.entity_id(section, generation, "chunk", 1)
    assert re.fullmatch(r"urn:chunk:[0-9a-f-]{36}", first)
    others = {
        chunk_id(section, generation, 2), chunk_id("urn:section:2", generation, 1), chunk_id(section, "h" * 32, 1),
    }  # fmt: skip
    assert first not in others and len(others) == 3
    assert chunk_activity_iri(section, generation, 1) == ids.activity_iri(section, generation, "chunk", 1)
    assert chunk_activity_iri(section, generation, 1) != chunk_activity_iri(section, generation, 2)


def test_chunk_generation_depends_on_the_section_generation_and_the_parameters():
    base = chunk_generation("g" * 32, 2000, 100)
    assert base == chunk_generation("g" * 32, 2000, 100) and len(base) == 32
    others = {
        chunk_generation("h" * 32, 2000, 100),
        chunk_generation("g" * 32, 1000, 100),
        chunk_generation("g" * 32, 2000, 50),
    }
    assert base not in others and len(others) == 3


def test_chunk_triples_link_the_chunk_to_its_section_with_typed_numbers():
    section = "urn:section:s"
    chunk = chunk_text("alpha beta gamma delta", 11, 0)[1]
    assert (chunk.index, chunk.offset, chunk.length, chunk.text) == (2, 11, 5, "gamma")
    cid, activity = chunk_id(section, "g", 2), chunk_activity_iri(section, "g", 2)
    triples = chunk_triples(chunk, cid, section, activity, 11, 0, "2025-01-02T03:04:05Z")
    agent = ids.agent_iri("chunker")
    assert all(t.g == p.GRAPH_SOURCE for t in triples)
    facts = {(t.s, t.p, t.o, t.o_type, t.datatype) for t in triples}

    def integer(s: str, pred: str, v: int) -> tuple[str, str, str, str, str]:
        return s, pred, str(v), "literal", p.XSD_INTEGER

    expected = {
        (cid, p.RDF_TYPE, p.PROV_ENTITY, "iri", ""),
        (cid, p.RDF_TYPE, p.TG_CHUNK_TYPE, "iri", ""),
        (cid, p.PROV_WAS_DERIVED_FROM, section, "iri", ""),
        (cid, p.PROV_WAS_GENERATED_BY, activity, "iri", ""),
        (cid, p.RDFS_LABEL, "Chunk 2", "literal", ""),
        integer(cid, p.TG_CHUNK_INDEX, 2),
        integer(cid, p.TG_CHAR_OFFSET, 11),
        integer(cid, p.TG_CHAR_LENGTH, 5),
        (activity, p.RDF_TYPE, p.PROV_ACTIVITY, "iri", ""),
        (activity, p.PROV_USED, section, "iri", ""),
        (activity, p.PROV_WAS_ASSOCIATED_WITH, agent, "iri", ""),
        (activity, p.PROV_STARTED_AT_TIME, "2025-01-02T03:04:05Z", "literal", p.XSD_DATETIME),
        (activity, p.TG_COMPONENT_VERSION, "1.0.0", "literal", ""),
        integer(activity, p.TG_CHUNK_SIZE, 11),
        integer(activity, p.TG_CHUNK_OVERLAP, 0),
        (agent, p.RDF_TYPE, p.PROV_AGENT, "iri", ""),
        (agent, p.RDFS_LABEL, "chunker", "literal", ""),
    }
    assert expected <= facts
    # The chunking parameters describe the activity, not the chunk.
    assert not any(t.s == cid and t.p in (p.TG_CHUNK_SIZE, p.TG_CHUNK_OVERLAP) for t in triples)
