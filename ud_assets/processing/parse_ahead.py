"""Parse ahead: a batch's documents parsed in forked children while finished ones are stored."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice

from resources.model import DocumentMetadata, Librarian, LibrarianError, read_object
from resources.records import Failure, Generation
from ud_assets.decoding import ids
from ud_assets.decoding.decoder import describe_document, partition_document
from ud_assets.decoding.limits import Limits
from ud_assets.decoding.model import DecoderConfig, DocumentInfo, Element
from ud_assets.processing.document import DETECTION_BYTES
from ud_assets.processing.generations import deterministic_failure_of, is_current


@dataclass(frozen=True)
class Parsed:
    """A document's parse for one generation, done in the background."""

    fingerprint: str
    elements: list[Element]
    strategy_used: str
    notes: list[str]
    stats: dict[str, float]


@dataclass(frozen=True)
class Looked:
    """What parse-ahead read of a document, handed to the document's own processing: its attempt
    opens from these instead of reading the row, the head, the generation and the ledger again
    (4 of a small document's ~20 round trips). They are about as fresh as a runner's own reads
    would be: the row and the bytes are read just before the parse, which is of the bytes they
    describe; the generation and the ledger entry at most RECORDS_AHEAD documents earlier, within
    the same batch (a generation another run commits meanwhile costs a redundant decode, no more)."""

    meta: DocumentMetadata
    head: bytes
    generation: Generation | None
    failure: Failure | None
    mime_type: str  # detected from head and the row, as the attempt would detect it


@dataclass(frozen=True)
class _Read:
    """A document as read for its parse: its row, its kind, the generation and its bytes."""

    meta: DocumentMetadata
    info: DocumentInfo
    fingerprint: str
    data: bytes


# Documents whose generation and ledger entry are read together, ahead of their parses: two reads
# per RECORDS_AHEAD documents instead of two per document (on Cassandra each is a round trip and a
# slice of the workspace's partition; the rows are small).
RECORDS_AHEAD = 100


def parse_workers() -> int:
    """Documents of a batch parsed at once (UD_PARSE_WORKERS, default 2), each in its own child."""
    return Limits.from_env().workers


class ParseAhead:
    """Parses a batch's documents in the background, several at once, while finished ones are stored.

    Each parse runs in a forked child (decoding.isolation), so `workers` parses use as many cores
    while this process writes to the librarian. `in_completion_order` starts the largest documents
    first and hands documents back as their parses finish: a batch then costs about its longest
    parse plus that document's storage, instead of the sum of every parse and every store.
    At most `workers + lookahead` parsed documents wait in memory. Documents that would be
    skipped (up to date, or a known failure of the same generation) are not parsed ahead; those found
    up to date are remembered (found_current), so the runner does not look again.
    """

    def __init__(
        self,
        librarian: Librarian,
        config: DecoderConfig,
        version: str,
        force: bool = False,
        workers: int = 2,
        lookahead: int = 2,
    ):
        self.librarian, self.config, self.version, self.force = librarian, config, version, force
        self.window = max(1, workers) + max(0, lookahead)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="parse-ahead")
        # A document's reads (its row, bytes, ledger entry, generation) are done on a thread of their
        # own, ahead of its parse: a decoding child then starts its next document as soon as it has
        # replied, instead of idling while the parse thread reads (5 ms a small document).
        self._reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse-ahead-read")
        self._futures: dict[str, Future[Parsed | None]] = {}  # parses running or not yet handed out
        self._finished: dict[str, Future[Parsed | None]] = {}  # handed out, not yet taken or released
        self.waited: dict[str, float] = {}  # seconds the caller waited for each document's parse
        self._metadata: dict[str, DocumentMetadata] = {}  # read once, by largest_first
        # (ledger entry, generation) of the documents next in line, read RECORDS_AHEAD at a time.
        self._records: dict[str, tuple[Failure | None, Generation | None]] = {}
        # Documents whose generation was found current and complete here, by fingerprint: the
        # runner takes this verdict instead of reading the same rows, object and triples again.
        self._current: dict[str, str] = {}
        self._looked: dict[str, Looked] = {}  # by document, until the runner takes it

    def submit(self, document_id: str) -> None:
        if document_id not in self._futures:
            read = self._reads.submit(self._read, document_id)
            self._futures[document_id] = self._pool.submit(self._decode, read)

    def in_completion_order(self, document_ids: list[str]) -> Iterator[str]:
        """Yields every document id once, each as soon as its background parse has finished.

        A yielded document's parse waits for its `take` (or `release`, when the document did not
        need it), possibly from another thread; the caller bounds how many it holds at once."""
        from ud_assets.decoding.isolation import warm_up

        queue = deque(self.largest_first(document_ids))
        # The batch's kinds are warmed once, before its first parse (which waits for it): each child
        # then starts with their parsers imported. Only theirs: every format's costs 8-9 s of one
        # core, a batch of web pages about 2 s. A kind found only by detection is imported by the
        # parse that meets it, as a lone document's is.
        self._pool.submit(warm_up, self.declared_kinds())
        while queue or self._futures:
            while queue and len(self._futures) < self.window:
                if not self.force and queue[0] not in self._records:
                    self._read_records(list(islice(queue, RECORDS_AHEAD)))
                self.submit(queue.popleft())
            started = time.perf_counter()
            done, _ = wait(list(self._futures.values()), return_when=FIRST_COMPLETED)
            # Of those finished, the one started first (dicts keep submission order).
            document_id = next(k for k, future in self._futures.items() if future in done)
            self.waited[document_id] = time.perf_counter() - started
            self._finished[document_id] = self._futures.pop(document_id)
            yield document_id

    def largest_first(self, document_ids: list[str]) -> list[str]:
        """Biggest first, so the longest parse starts at once and the rest fill the other workers.

        Size is a cheap proxy for parse time; a document whose metadata cannot be read keeps its
        place and fails when it is processed, with its cause."""

        # One read for the batch's rows (a few requests, not one per document); a row another
        # writer made without size and hash gets them here, from its bytes.
        try:
            rows = self.librarian.get_metadata_many(document_ids)
        except LibrarianError:  # each document reads its own row again when processed, and fails with the cause
            rows = {}

        def size(meta: DocumentMetadata) -> int:
            try:
                self._metadata[meta.id] = meta = self.librarian.with_content_hash(meta)
                return meta.size
            except LibrarianError:  # reported by process_document, not here
                return 0

        hashed = [meta for meta in rows.values() if meta.sha256]
        unhashed = [meta for meta in rows.values() if not meta.sha256]
        sizes = {meta.id: size(meta) for meta in hashed}
        if unhashed:
            with ThreadPoolExecutor(max_workers=8) as pool:
                sizes.update(zip([m.id for m in unhashed], pool.map(size, unhashed)))
        return sorted(document_ids, key=lambda d: -sizes.get(d, 0))

    def declared_kinds(self) -> set[str] | None:
        """The kinds the batch's rows declare (as largest_first read them); None, for every
        format, when none was read or one declares no kind."""
        kinds = {meta.kind for meta in self._metadata.values()}
        return kinds if kinds and all(kinds) else None

    def _read_records(self, document_ids: list[str]) -> None:
        """The ledger entries and generations of the documents next in line, in one read of each."""
        try:
            failures = self.librarian.get_failures(document_ids)
            generations = self.librarian.get_generations(document_ids)
        except LibrarianError:  # each document reads its own when read for its parse, and fails with the cause
            return
        for document_id in document_ids:
            self._records[document_id] = (failures.get(document_id), generations.get(document_id))

    def take(self, document_id: str, fingerprint: str) -> Parsed | None:
        """The parse done ahead for this generation, or None.

        A failure of the background parse is raised here, as the parse's own failure."""
        future = self._finished.pop(document_id, None) or self._futures.pop(document_id, None)
        if future is None:
            return None
        parsed = future.result()
        if parsed is None or parsed.fingerprint != fingerprint:
            return None
        return parsed

    def _read(self, document_id: str) -> _Read | None:
        """What the document's parse needs from the librarian; None when it is not to be parsed ahead."""
        lib = self.librarian
        meta = self._metadata.pop(document_id, None) or lib.with_content_hash(lib.get_metadata(document_id))
        if meta.parent_id or meta.size > Limits.from_env().max_bytes:
            return None  # refused by the document's own processing, with its cause
        # The kind first, from the head as the document's own processing reads it: the fingerprint
        # holds the version of the kind's format family.
        data: bytes | None = None
        if 0 < meta.size <= DETECTION_BYTES:  # small: read whole at once, not its head and then all of it
            head = data = lib.objects.read(meta.object_id)
        else:
            head = lib.objects.read_range(meta.object_id, 0, min(DETECTION_BYTES, meta.size)) if meta.size else b""
        info = describe_document(
            head,
            document_id,
            self.config,
            filename=meta.title,
            declared_kind=meta.kind,
            title=meta.title,
            version=self.version,
        )
        fingerprint = ids.fingerprint(meta.sha256, self.version, self.config, info.mime_type)
        if not self.force:
            records = self._records.pop(document_id, None)
            failure, generation = records or (lib.get_failure(document_id), lib.get_generation(document_id))
            self._looked[document_id] = Looked(meta, head[:DETECTION_BYTES], generation, failure, info.mime_type)
            if deterministic_failure_of(failure, fingerprint) is not None:
                return None
            if is_current(lib, document_id, fingerprint, generation):
                self._current[document_id] = fingerprint
                return None
        if data is None:
            data = read_object(lib.objects, meta.object_id, meta.size)  # the metadata is read already
        return _Read(meta, info, fingerprint, data)

    def _decode(self, read: Future[_Read | None]) -> Parsed | None:
        found = read.result()  # a failed read is the parse's failure, raised on take
        if found is None:
            return None
        elements = partition_document(found.data, found.info, self.config, found.meta.title or None)
        return Parsed(found.fingerprint, elements, found.info.strategy_used, found.info.notes, dict(found.info.stats))

    def looked(self, document_id: str) -> Looked | None:
        """What was read of the document for its parse (once: the runner takes it)."""
        return self._looked.pop(document_id, None)

    def found_current(self, document_id: str, fingerprint: str) -> bool:
        """This generation of the document was current and complete when it was looked at ahead."""
        return self._current.get(document_id) == fingerprint

    def release(self, document_id: str) -> None:
        """Forget a handed-out parse that was not taken (the document was skipped or failed first)."""
        self._finished.pop(document_id, None)
        self._looked.pop(document_id, None)

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._finished.clear()
        self._records.clear()
        self._pool.shutdown(wait=True)
        self._reads.shutdown(wait=True, cancel_futures=True)
