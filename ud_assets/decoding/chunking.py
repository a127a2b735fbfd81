"""Chunking of page/section text, with exact character offsets.

Follows the semantics of LangChain's RecursiveCharacterTextSplitter as TrustGraph's chunker uses
it (separators "\\n\\n", "\\n", " ", "", each kept at the start of the piece it precedes; small
pieces merged up to chunk_size; consecutive chunks overlapping by whole pieces of at most
chunk_overlap characters; chunk edges stripped of whitespace). For text without tables the
chunk texts are the same as LangChain's. Upstream only approximated each chunk's charOffset;
here the splitter works on positions in the original text, so
``text[chunk.offset:chunk.offset + chunk.length] == chunk.text`` holds for every chunk.

Two additions for the HTML tables the decoder puts in section text:
- a ``<table>…</table>`` no longer than chunk_size is never cut: no split point falls inside it;
- a larger one is cut preferably between two rows (``</tr>|<tr>``, ranked just below "\\n\\n").

One deviation: LangChain can emit a chunk lying wholly inside its neighbour (an overlap tail
followed only by whitespace, or a chunk whose leading whitespace was stripped); it adds no
text, so it is dropped.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from . import ids, provenance
from .provenance import Triple

DEFAULT_CHUNK_SIZE = 2000
DEFAULT_CHUNK_OVERLAP = 100
CHUNKER_COMPONENT = "chunker"
CHUNKER_VERSION = "1.0.0"

_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)


# Each separator starts the piece after it (LangChain's keep_separator=True); None: between any
# two characters. The row boundary is an empty match, so a row keeps both its tags.
_Separators = tuple[re.Pattern[str] | None, ...]
_SEPARATORS: _Separators = (
    re.compile("\n\n"),
    re.compile(r"(?<=</tr>)(?=\s*<tr[\s>])", re.IGNORECASE),
    re.compile("\n"),
    re.compile(" "),
    None,
)


@dataclass(frozen=True)
class Chunk:
    index: int  # 1-based, as TrustGraph's chunkIndex
    offset: int  # of the first character, in the text that was chunked
    length: int
    text: str


def chunk_text(
    text: str, chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
) -> list[Chunk]:
    """The chunks of text, in order; [] for empty or whitespace-only text."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be >= 0 and smaller than chunk_size ({chunk_size}), got {chunk_overlap}")
    spans = _Splitter(text, chunk_size, chunk_overlap).split(0, len(text), _SEPARATORS)
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        start, end = _strip(text, start, end)
        if start >= end or (kept and end <= kept[-1][1]):
            continue  # empty, or inside the previous chunk
        if kept and start == kept[-1][0]:
            kept.pop()  # the previous chunk is inside this one
        kept.append((start, end))
    return [Chunk(i, start, end - start, text[start:end]) for i, (start, end) in enumerate(kept, 1)]


class _Splitter:
    def __init__(self, text: str, size: int, overlap: int):
        self.text, self.size, self.overlap = text, size, overlap
        self._atomic = _Spans([m.span() for m in _TABLE.finditer(text) if len(m.group()) <= size])

    def split(self, start: int, end: int, separators: _Separators) -> list[tuple[int, int]]:
        """Chunk spans (unstripped) of text[start:end]: LangChain's _split_text on positions."""
        cuts, rest = self._cuts(start, end, separators)
        bounds = [start, *cuts, end]
        chunks: list[tuple[int, int]] = []
        small: list[tuple[int, int]] = []
        for piece in itertools.pairwise(bounds):
            # LangChain's test is strict: a piece of exactly chunk_size is split further.
            if piece[1] - piece[0] < self.size:
                small.append(piece)
                continue
            chunks += self._merge(small)
            small = []
            chunks += self.split(*piece, rest) if rest else [piece]
        return chunks + self._merge(small)

    def _cuts(self, start: int, end: int, separators: _Separators) -> tuple[list[int], _Separators]:
        """Cut positions for the first separator occurring in the span, and the finer separators.
        Occurrences inside a table that fits are ignored, so nothing ever cuts it."""
        for i, separator in enumerate(separators):
            if separator is None:
                # Single characters (an atomic table stays whole); nothing finer is left.
                return [p for p in range(start + 1, end) if not self._atomic.strictly_inside(p)], ()
            found = [m.start() for m in separator.finditer(self.text, start, end)]
            found = [p for p in found if not self._atomic.strictly_inside(p)]
            if found:
                # A separator at the very start counts as occurring (as in LangChain) but cuts nothing.
                return [p for p in found if start < p < end], separators[i + 1 :]
        return [], ()

    def _merge(self, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """LangChain's _merge_splits: consecutive pieces fill a chunk up to chunk_size; the next
        chunk restarts from the last whole pieces totalling at most chunk_overlap characters."""
        chunks: list[tuple[int, int]] = []
        first = total = 0  # the current chunk is pieces[first:i]
        for i, (start, end) in enumerate(pieces):
            length = end - start
            if total and total + length > self.size:
                chunks.append((pieces[first][0], pieces[i - 1][1]))
                while total > self.overlap or (total + length > self.size and total > 0):
                    total -= pieces[first][1] - pieces[first][0]
                    first += 1
            total += length
        if total:
            chunks.append((pieces[first][0], pieces[-1][1]))
        return chunks


class _Spans:
    """Sorted, non-overlapping [start, end) spans."""

    def __init__(self, spans: list[tuple[int, int]]):
        self._starts = [s for s, _ in spans]
        self._ends = [e for _, e in spans]

    def strictly_inside(self, position: int) -> bool:
        i = bisect.bisect_left(self._starts, position) - 1
        return i >= 0 and position < self._ends[i]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())


def chunk_generation(section_generation: str, chunk_size: int, chunk_overlap: int) -> str:
    """What a section's chunks are a function of: its own generation, the parameters, this logic.
    Pass it as chunk_id's generation so that other parameters give other chunk ids."""
    payload = f"{section_generation}\x1f{chunk_size}\x1f{chunk_overlap}\x1f{CHUNKER_VERSION}"
    return ids.sha256_hex(payload.encode())[:32]


def chunk_id(section_id: str, generation: str, index: int) -> str:
    """urn:chunk:{uuid5}: the same section and generation always give the same chunk ids."""
    return ids.entity_id(section_id, generation, "chunk", index)


def chunk_activity_iri(section_id: str, generation: str, index: int) -> str:
    return ids.activity_iri(section_id, generation, "chunk", index)


def chunk_triples(
    chunk: Chunk,
    chunk_id: str,
    section_iri: str,
    activity_iri: str,
    chunk_size: int,
    chunk_overlap: int,
    started_at: str,
) -> list[Triple]:
    """Chunk ← section provenance; the chunking parameters are recorded on the activity, as upstream."""
    agent = ids.agent_iri(CHUNKER_COMPONENT)
    return [
        *provenance.activity_triples(activity_iri, section_iri, agent, CHUNKER_COMPONENT, CHUNKER_VERSION, started_at),
        provenance.literal(activity_iri, provenance.TG_CHUNK_SIZE, chunk_size),
        provenance.literal(activity_iri, provenance.TG_CHUNK_OVERLAP, chunk_overlap),
        *provenance.derived_entity_triples(
            chunk_id,
            "chunk",
            section_iri,
            activity_iri,
            f"Chunk {chunk.index}",
            chunk_index=chunk.index,
            char_offset=chunk.offset,
            char_length=chunk.length,
        ),
    ]
