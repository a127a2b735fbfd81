"""Import a folder or an S3 prefix into the librarian: many files, one process, resumable, no duplicates.

    import_sources(librarian, [FolderSource(...), S3Source(...)], ...)  ->  ImportSummary

What `ud librarian import` and bench use; no Dagster here.

Document ids. A file's id is its path relative to the source root, '/'-separated (for an S3
prefix: the key after the prefix), behind an optional id prefix: `reports/2024/q1.pdf`. Re-running
an import therefore finds the same ids; an id the librarian or Dagster cannot take (a ',', '[',
a control character, > 512 characters: `partition_key_problem`, `check_id`) is refused with the
reason, never renamed. Title: the file name. Kind: detected as `ud librarian add` detects it
(`detect_mime` over the first 64 KiB and the name).

Duplicates. Every file is hashed (sha256) before anything is written. A content index maps each
source document's id to its sha256 and back: filled at the start from the librarian's rows (read
page by page), then with each document the run adds. It is a SQLite file in a temporary folder,
so a library of a million documents costs disk (~200 MB), not memory (measured: +6 MB RSS); reading the rows is the one
cost that grows with the library (seconds per 100,000 rows). A file is then
- added: new id, new bytes;
- present: its id is in the librarian with the same sha256 (an earlier run, cut short or not);
- a duplicate: new id, but the same bytes as a document of the librarian or an earlier file of
  this run (that document's id is reported; nothing is stored);
- refused, with the reason: an unusable id, an id the librarian holds with other bytes, a file
  that cannot be read or changed while being read.

Resume. Files go in batches (BATCH_FILES files or BATCH_BYTES bytes): read and hashed, their
bytes written to the object store, then their rows registered with `register_documents`, which
logs an 'added' upload event for each, so the upload sensor decodes them in batches with no other
step. Bytes before rows: a row only ever points at complete bytes. A run killed at any point
leaves at most the bytes of one batch without rows; their object ids follow from (workspace, id,
sha256), so the next run writes them to the same keys again (no orphans pile up) and registers
what is missing; ids already registered count as present. On Cassandra, rows are written before
their upload events, in two steps: a run killed between them leaves rows without events; the
sensor's sweep of the document table (ud_assets/defs/sensors.py) still finds and decodes them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import os
import shutil
import signal
import sqlite3
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from resources.librarian import HashingReader, check_id, now_utc
from resources.model import DocumentMetadata, Librarian, LibrarianError
from ud_assets.defs.keys import partition_key_problem

# Object ids of imported documents: uuid5 of (workspace, id, sha256) in this namespace.
IMPORT_OBJECT_NAMESPACE = uuid.UUID("3b7e51c2-9a64-5d1f-8e2b-6c0a4f9d1e73")
BATCH_FILES = 500  # files read, stored and registered together (one register_documents call)
BATCH_BYTES = 64 << 20  # ... or fewer, so that a batch of large files stays in bounded memory
IN_MEMORY = 8 << 20  # files up to this size are read once into memory; larger ones are streamed twice
HEAD_BYTES = 1 << 16  # what kind detection reads (as `ud librarian add`)
THREADS = 10  # concurrent reads and object writes (boto3 keeps 10 connections per client)
INDEX_PAGE = 5000  # librarian rows read at a time into the content index
EXAMPLES = 20  # duplicates and refusals the summary keeps to show (all go to on_outcome)

ADDED = "added"
PRESENT = "present"
DUPLICATE = "duplicate"
REFUSED = "refused"


@dataclass(frozen=True)
class Entry:
    """One file of a source: its path below the root ('/'-separated), size, and where to read it."""

    relative: str
    size: int
    location: str  # a local path, or an S3 key

    @property
    def name(self) -> str:
        return self.relative.rsplit("/", 1)[-1]


class Source(Protocol):
    """A folder or an S3 prefix: its files in a stable order, and their bytes."""

    label: str

    def entries(self) -> Iterator[Entry]: ...

    def read(self, entry: Entry) -> bytes: ...

    def open(self, entry: Entry) -> BinaryIO: ...


def _selected(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """A glob matches the relative path or the file name; exclude wins over include."""
    name = relative.rsplit("/", 1)[-1]

    def matches(pattern: str) -> bool:
        return fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern)

    if include and not any(matches(p) for p in include):
        return False
    return not any(matches(p) for p in exclude)


class FolderSource:
    """The regular files below a folder, recursively, in sorted path order (symlinked folders are not followed)."""

    def __init__(self, root: str | os.PathLike[str], include: Sequence[str] = (), exclude: Sequence[str] = ()):
        self.root = os.path.abspath(os.fspath(root))
        if not os.path.isdir(self.root):
            raise LibrarianError(f"{root}: not a folder")
        self.label = self.root
        self.include, self.exclude = list(include), list(exclude)

    def entries(self) -> Iterator[Entry]:
        def walk(folder: str, prefix: str) -> Iterator[Entry]:
            try:
                with os.scandir(folder) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError as e:
                raise LibrarianError(f"{folder}: {e.strerror or e}") from e
            for item in items:
                relative = prefix + item.name
                if item.is_dir(follow_symlinks=False):
                    yield from walk(item.path, relative + "/")
                    continue
                if not _selected(relative, self.include, self.exclude):
                    continue
                try:
                    st = item.stat()  # follows a symlinked file
                except OSError:
                    st = None
                size = st.st_size if st is not None and stat.S_ISREG(st.st_mode) else -1
                yield Entry(relative, size, item.path)  # size -1: not a regular file, refused

        yield from walk(self.root, "")

    def read(self, entry: Entry) -> bytes:
        with open(entry.location, "rb") as f:
            return f.read()

    def open(self, entry: Entry) -> BinaryIO:
        return open(entry.location, "rb")


def parse_s3_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of s3://bucket/prefix; the prefix is a folder: '' or ending in '/'."""
    if not url.startswith("s3://"):
        raise LibrarianError(f"{url!r} is not an s3://bucket/prefix URL")
    bucket, _, prefix = url[5:].partition("/")
    if not bucket:
        raise LibrarianError(f"{url!r} names no bucket")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return bucket, prefix


class S3Source:
    """The objects under an S3 prefix (any endpoint: boto3's usual environment, resources.s3.make_client),
    in key order; folder markers (keys ending in '/') are skipped."""

    def __init__(self, url: str, include: Sequence[str] = (), exclude: Sequence[str] = (), client: Any = None):
        self.bucket, self.prefix = parse_s3_url(url)
        self.label = f"s3://{self.bucket}/{self.prefix}"
        self.include, self.exclude = list(include), list(exclude)
        if client is None:
            from resources.s3 import make_client

            client = make_client()
        self.client = client

    def entries(self) -> Iterator[Entry]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        try:
            for page in pages:
                for obj in page.get("Contents", []):
                    key = obj["Key"]
                    relative = key[len(self.prefix) :]
                    if not relative or key.endswith("/") or not _selected(relative, self.include, self.exclude):
                        continue
                    yield Entry(relative, int(obj.get("Size", 0)), key)
        except Exception as e:
            if isinstance(e, LibrarianError):
                raise
            raise LibrarianError(f"listing {self.label}: {e}") from e

    def read(self, entry: Entry) -> bytes:
        return self.open(entry).read()

    def open(self, entry: Entry) -> BinaryIO:
        body = self.client.get_object(Bucket=self.bucket, Key=entry.location)["Body"]
        return body  # a botocore StreamingBody: read(n) like a binary file


def open_source(spec: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Source:
    """s3://bucket/prefix, or a local folder."""
    if spec.startswith("s3://"):
        return S3Source(spec, include, exclude)
    return FolderSource(spec, include, exclude)


class ContentIndex:
    """id -> sha256 and sha256 -> id of the librarian's source documents, in a SQLite file (bounded memory)."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="ud-import-")
        self.db = sqlite3.connect(os.path.join(self._folder, "index.sqlite"))
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE doc (id TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID")
        self.count = 0

    def load(self, documents: Iterable[DocumentMetadata]) -> int:
        """Index documents (the librarian's, page by page); the index on sha256 is built after."""
        rows: list[tuple[str, str]] = []
        for d in documents:
            rows.append((d.id, d.sha256))
            if len(rows) >= INDEX_PAGE:
                self.add(rows)
                rows = []
        self.add(rows)
        self.db.execute("CREATE INDEX IF NOT EXISTS doc_sha ON doc (sha256)")
        return self.count

    def add(self, pairs: Sequence[tuple[str, str]]) -> None:
        if pairs:
            with self.db:
                self.db.executemany("INSERT OR IGNORE INTO doc (id, sha256) VALUES (?, ?)", pairs)
            self.count += len(pairs)

    def sha_of(self, id: str) -> str | None:
        row = self.db.execute("SELECT sha256 FROM doc WHERE id = ?", (id,)).fetchone()
        return None if row is None else row[0]

    def id_of(self, sha256: str) -> str | None:
        """The first id (in id order) holding these bytes; rows without a sha256 never match."""
        if not sha256:
            return None
        row = self.db.execute("SELECT min(id) FROM doc WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        self.db.close()
        shutil.rmtree(self._folder, ignore_errors=True)


@dataclass(frozen=True)
class Outcome:
    """What became of one file: status ADDED | PRESENT | DUPLICATE | REFUSED, and why (the duplicate's
    document id, or the reason of a refusal)."""

    source: str
    relative: str
    id: str
    status: str
    detail: str = ""

    def line(self) -> str:
        if self.status == DUPLICATE:
            return f"{self.relative}: same bytes as document {self.detail!r}"
        if self.status == REFUSED:
            return f"{self.relative}: {self.detail}"
        return f"{self.relative}: {self.status}"


@dataclass
class ImportSummary:
    """Counters of a run (updated as it goes, so an interrupted run can report them)."""

    total: int | None = None  # files to look at, when counted beforehand
    seen: int = 0
    added: int = 0
    present: int = 0
    duplicates: int = 0
    refused: int = 0
    bytes_added: int = 0
    indexed: int = 0  # documents the librarian held at the start
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    examples: dict[str, list[str]] = field(default_factory=lambda: {DUPLICATE: [], REFUSED: []})

    @property
    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    @property
    def rate(self) -> float:
        """Files looked at per second."""
        return self.seen / self.elapsed if self.elapsed > 0 else 0.0

    def count(self, outcome: Outcome) -> None:
        self.seen += 1
        if outcome.status == ADDED:
            self.added += 1
        elif outcome.status == PRESENT:
            self.present += 1
        elif outcome.status == DUPLICATE:
            self.duplicates += 1
        else:
            self.refused += 1
        shown = self.examples.get(outcome.status)
        if shown is not None and len(shown) < EXAMPLES:
            shown.append(outcome.line())

    def lines(self) -> list[str]:
        """The summary a person reads at the end."""
        out = [
            f"{self.seen} files in {self.elapsed:.1f} s ({self.rate:.0f}/s): "
            f"{self.added} added ({_size(self.bytes_added)}), {self.present} already present, "
            f"{self.duplicates} skipped as duplicates, {self.refused} refused"
        ]
        for status, total, what in ((DUPLICATE, self.duplicates, "duplicate"), (REFUSED, self.refused, "refused")):
            for line in self.examples[status]:
                out.append(f"  {what}: {line}")
            if total > len(self.examples[status]):
                out.append(f"  ... and {total - len(self.examples[status])} more {what}s")
        return out


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


@dataclass
class _Loaded:
    entry: Entry
    id: str
    sha256: str = ""
    size: int = 0
    kind: str = ""
    data: bytes | None = None  # the bytes, unless the file is larger than IN_MEMORY
    problem: str = ""


def object_id_for(workspace: str, document_id: str, sha256: str) -> uuid.UUID:
    """Where an imported document's bytes go: the same file imported again lands on the same key."""
    return uuid.uuid5(IMPORT_OBJECT_NAMESPACE, f"{workspace}\x1f{document_id}\x1f{sha256}")


def id_problem(document_id: str) -> str | None:
    """Why an id cannot be a librarian id and a Dagster partition key, or None."""
    problem = partition_key_problem(document_id)
    if problem:
        return f"document id {document_id!r} {problem}"
    try:
        check_id(document_id)
    except LibrarianError as e:
        return str(e)
    return None


def _detect(head: bytes, name: str) -> str:
    from ud_assets.decoding.detect import detect_mime

    return detect_mime(head, filename=name)


def _failure(e: BaseException) -> str:
    if isinstance(e, OSError):
        return f"cannot read: {e.strerror or e}"
    return f"cannot read: {' '.join(str(e).split())}"


class Importer:
    """One import run into one librarian (several sources share its content index and summary)."""

    def __init__(
        self,
        librarian: Librarian,
        id_prefix: str = "",
        tags: Sequence[str] = (),
        on_outcome: Callable[[Outcome], None] | None = None,
        on_progress: Callable[[ImportSummary], None] | None = None,
        summary: ImportSummary | None = None,
        threads: int = THREADS,
    ):
        self.librarian = librarian
        self.id_prefix = id_prefix
        self.tags = tuple(tags)
        self.on_outcome = on_outcome
        self.on_progress = on_progress
        self.summary = summary if summary is not None else ImportSummary()
        self.threads = threads
        self.index: ContentIndex | None = None

    def __enter__(self) -> Importer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    def _ready_index(self) -> ContentIndex:
        if self.index is None:
            index = ContentIndex()
            try:
                self.summary.indexed = index.load(self.librarian.iter_documents(page=INDEX_PAGE))
            except BaseException:
                index.close()
                raise
            self.index = index
        return self.index

    def run(self, source: Source) -> ImportSummary:
        index = self._ready_index()
        # Two pools, one batch ahead: the next batch is read and hashed while this one's bytes are
        # written and its rows registered (two batches in memory at most).
        readers = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="ud-import-read")
        writers = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="ud-import-write")
        try:
            ahead: list[Future[_Loaded]] | None = None
            for batch in self._batches(source.entries()):
                loads = [readers.submit(self._load, source, entry) for entry in batch]
                if ahead is not None:
                    self._import_batch(source, (f.result() for f in ahead), index, writers)
                ahead = loads
            if ahead is not None:
                self._import_batch(source, (f.result() for f in ahead), index, writers)
        finally:  # interrupted: the reads and writes under way finish, the rest are dropped
            for pool in (readers, writers):
                pool.shutdown(wait=True, cancel_futures=True)
        return self.summary

    def _batches(self, entries: Iterator[Entry]) -> Iterator[list[Entry]]:
        batch: list[Entry] = []
        held = 0
        for entry in entries:
            batch.append(entry)
            held += min(max(entry.size, 0), IN_MEMORY)
            if len(batch) >= BATCH_FILES or held >= BATCH_BYTES:
                yield batch
                batch, held = [], 0
        if batch:
            yield batch

    def _load(self, source: Source, entry: Entry) -> _Loaded:
        loaded = _Loaded(entry, self.id_prefix + entry.relative)
        problem = id_problem(loaded.id)
        if problem:
            loaded.problem = problem
            return loaded
        if entry.size < 0:
            loaded.problem = "not a regular file"
            return loaded
        try:
            if entry.size <= IN_MEMORY:
                data = source.read(entry)
                loaded.data, loaded.size, loaded.sha256 = data, len(data), hashlib.sha256(data).hexdigest()
                head = data[:HEAD_BYTES]
            else:
                digest, size = hashlib.sha256(), 0
                with source.open(entry) as f:
                    head = f.read(HEAD_BYTES)
                    chunk = head
                    while chunk:
                        digest.update(chunk)
                        size += len(chunk)
                        chunk = f.read(1 << 20)
                loaded.size, loaded.sha256 = size, digest.hexdigest()
            loaded.kind = _detect(head, entry.name)
        except LibrarianError:
            raise
        except Exception as e:  # this file cannot be read (gone, permissions, no such key): refused
            if _is_unreachable(e):
                raise LibrarianError(f"reading {entry.location} from {source.label}: {e}") from e
            loaded.problem = _failure(e)
        return loaded

    def _put(self, source: Source, loaded: _Loaded, object_id: uuid.UUID) -> str:
        """Write the bytes; '' or the reason the file is refused. A large file is read a second
        time: bytes that differ from the first read's are deleted again and the file refused."""
        if loaded.data is not None:
            self.librarian.objects.put(object_id, loaded.data, loaded.kind)
            return ""
        try:
            with source.open(loaded.entry) as f:
                reader = HashingReader(f)  # counts and hashes what the store reads, in order
                self.librarian.objects.put(object_id, reader, loaded.kind)
        except LibrarianError:
            raise
        except Exception as e:  # the file went away between the two reads
            if _is_unreachable(e):
                raise
            self._discard(object_id)
            return _failure(e)
        if reader.sha256 != loaded.sha256 or reader.size != loaded.size:
            self._discard(object_id)
            return "the file changed while it was imported"
        return ""

    def _discard(self, object_id: uuid.UUID) -> None:
        try:
            self.librarian.objects.delete(object_id)
        except Exception:
            pass  # an orphan object is harmless

    def _import_batch(
        self, source: Source, loads: Iterable[_Loaded], index: ContentIndex, pool: ThreadPoolExecutor
    ) -> None:
        outcomes: list[Outcome] = []
        new: list[tuple[_Loaded, uuid.UUID]] = []
        batch_ids: dict[str, str] = {}  # id -> sha256, of this batch's new documents
        batch_shas: dict[str, str] = {}  # sha256 -> id
        label = source.label

        for loaded in loads:
            if loaded.problem:
                outcomes.append(Outcome(label, loaded.entry.relative, loaded.id, REFUSED, loaded.problem))
                continue
            held = batch_ids.get(loaded.id) or index.sha_of(loaded.id)
            if held is not None:
                if held == loaded.sha256:
                    outcomes.append(Outcome(label, loaded.entry.relative, loaded.id, PRESENT))
                else:
                    outcomes.append(
                        Outcome(
                            label,
                            loaded.entry.relative,
                            loaded.id,
                            REFUSED,
                            f"document {loaded.id!r} exists with other bytes"
                            + (f" (sha256 {held[:12]}...)" if held else " (or none recorded)"),
                        )
                    )
                continue
            twin = batch_shas.get(loaded.sha256) or index.id_of(loaded.sha256)
            if twin is not None:
                outcomes.append(Outcome(label, loaded.entry.relative, loaded.id, DUPLICATE, twin))
                continue
            batch_ids[loaded.id] = loaded.sha256
            batch_shas[loaded.sha256] = loaded.id
            new.append((loaded, object_id_for(self.librarian.workspace, loaded.id, loaded.sha256)))
            outcomes.append(Outcome(label, loaded.entry.relative, loaded.id, ADDED))

        # Bytes first ...
        problems = dict(zip([n[0].id for n in new], pool.map(lambda n: self._put(source, *n), new)))
        now = now_utc()
        metas = [
            DocumentMetadata(
                id=loaded.id,
                kind=loaded.kind,
                object_id=object_id,
                time=now,
                workspace=self.librarian.workspace,
                title=loaded.entry.name,
                tags=self.tags,
                size=loaded.size,
                sha256=loaded.sha256,
            )
            for loaded, object_id in new
            if not problems[loaded.id]
        ]
        # ... then their rows and upload events: registered and counted, or neither (a Ctrl-C
        # in between would leave the summary short of rows that are in the librarian).
        with _interrupt_deferred():
            self._register(metas, outcomes, problems, index)
        if self.on_progress is not None:
            self.on_progress(self.summary)

    def _register(
        self, metas: list[DocumentMetadata], outcomes: list[Outcome], problems: dict[str, str], index: ContentIndex
    ) -> None:
        registered = {m.id for m in self.librarian.register_documents(metas)}
        taken = [m for m in metas if m.id not in registered]  # another writer took the id meanwhile
        for meta in taken:
            self._discard_unless_referenced(meta)
        refusals = {m.id: f"document {m.id!r} was added by another writer meanwhile" for m in taken}
        refusals.update((i, p) for i, p in problems.items() if p)
        index.add([(m.id, m.sha256) for m in metas if m.id in registered])
        for outcome in outcomes:
            if outcome.status == ADDED and outcome.id in refusals:
                outcome = dataclasses.replace(outcome, status=REFUSED, detail=refusals[outcome.id])
            self.summary.count(outcome)
            if self.on_outcome is not None:
                self.on_outcome(outcome)
        self.summary.bytes_added += sum(m.size for m in metas if m.id in registered)

    def _discard_unless_referenced(self, meta: DocumentMetadata) -> None:
        try:
            if self.librarian.get_metadata(meta.id).object_id == meta.object_id:
                return
        except LibrarianError:
            pass
        self._discard(meta.object_id)


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) inside the block takes effect at its end (in the main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
        signal.SIG_IGN,
        None,
    ):
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _is_unreachable(e: BaseException) -> bool:
    """A server that cannot be reached (the whole import stops) rather than one file's problem."""
    name = type(e).__name__
    return name in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError")


def count_entries(sources: Sequence[Source]) -> int:
    """Files the sources hold (a listing pass: what a progress bar needs for its total)."""
    return sum(1 for s in sources for _ in s.entries())


def import_sources(
    librarian: Librarian,
    sources: Sequence[Source],
    id_prefix: str = "",
    tags: Sequence[str] = (),
    on_outcome: Callable[[Outcome], None] | None = None,
    on_progress: Callable[[ImportSummary], None] | None = None,
    summary: ImportSummary | None = None,
) -> ImportSummary:
    """Import every file of the sources, in order; the summary (also updated as it goes)."""
    with Importer(librarian, id_prefix, tags, on_outcome, on_progress, summary) as importer:
        for source in sources:
            importer.run(source)
        importer.summary.finished = time.monotonic()
        return importer.summary


__all__ = [
    "ADDED",
    "DUPLICATE",
    "PRESENT",
    "REFUSED",
    "ContentIndex",
    "Entry",
    "FolderSource",
    "ImportProgress",
    "ImportSummary",
    "Importer",
    "Outcome",
    "S3Source",
    "Source",
    "count_entries",
    "id_problem",
    "import_sources",
    "object_id_for",
    "open_source",
    "parse_s3_url",
]


class ImportProgress:
    """What a person watching the import sees: on a terminal, one bar redrawn in place (at most
    10 times a second); otherwise a plain line every `every` seconds. `done` ends it."""

    def __init__(self, stream: Any, bar: bool, every: float = 5.0, width: int | None = None):
        self.stream, self.bar, self.every = stream, bar, every
        self.width = width
        self._last = 0.0
        self._drawn = False

    def update(self, summary: ImportSummary, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < (0.1 if self.bar else self.every):
            return
        self._last = now
        if self.bar:
            width = self.width or shutil.get_terminal_size((100, 24)).columns
            self.stream.write("\r" + self.bar_line(summary, width).ljust(width - 1)[: width - 1])
            self._drawn = True
        else:
            self.stream.write(f"import: {self.counts(summary)}\n")
        self.stream.flush()

    @staticmethod
    def counts(s: ImportSummary) -> str:
        total = f"/{s.total}" if s.total is not None else ""
        return (
            f"{s.seen}{total} files, {s.rate:.0f} files/s: {s.added} added, {s.present} present, "
            f"{s.duplicates} duplicates, {s.refused} refused"
        )

    @staticmethod
    def bar_line(s: ImportSummary, width: int) -> str:
        rate = s.rate
        if s.total:
            fraction = min(1.0, s.seen / s.total)
            left = (s.total - s.seen) / rate if rate > 0 else 0.0
            tail = (
                f" {s.seen}/{s.total} {fraction:4.0%} {rate:.0f}/s ETA {int(left) // 60}:{int(left) % 60:02d}"
                f" added {s.added} present {s.present} dup {s.duplicates} refused {s.refused}"
            )
            cells = max(10, min(40, width - len(tail) - 3))
            filled = int(cells * fraction)
            return "[" + "#" * filled + "." * (cells - filled) + "]" + tail
        return f"importing: {ImportProgress.counts(s)}"

    def done(self, summary: ImportSummary) -> None:
        self._last = 0.0
        if self.bar:
            self.update(summary, force=True)
            self.stream.write("\n")
            self.stream.flush()
