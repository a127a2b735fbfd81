"""What a quad costs in TrustGraph's Cassandra layout: rows per quad and Cassandra's CPU per quad.

    python -m bench.triples [--documents samples] [--copies 20] [--repeat 3] [--before-30] [--out FILE]
    (from the repository root, with the servers of `make services-up` and `eval "$(scripts/services/env.sh)"`)

The quads are real ones: the documents (default samples/) are decoded once through the project's
normal path (runner.process_document, every stage) into an embedded librarian in a temporary folder,
and its stored quads are read back; --copies renames their subjects to make a few thousand. Each
round inserts them with the project's CassandraTripleStore into a fresh workspace (keyspace), reads
the Cassandra server's CPU (utime + stime of its process, /proc/<pid>/stat; the pid from
.services/cassandra/cassandra.pid) before and after, counts the rows of both tables, and drops the
keyspace. Figures are medians over --repeat rounds:

- triples.rows_per_quad: rows of quads_by_entity + quads_by_collection per quad
- triples.cassandra_cpu_ms_per_quad: the server's CPU during the insert (and its flush-free aftermath
  of 1 s), per quad
- per_document: rows per document for each decoded document (its own quads only)

--before-30 also measures the layout before issue #30 (no object row for literal objects), its
rounds alternated with the current layout's, as `before_30` beside `triples`.

--trustgraph also writes the same quads with TrustGraph 2.11.1's own writer (one logged batch per
quad, awaited one at a time, as its triples-store service does), rounds alternated, as
`trustgraph_writer`; `ud_vs_trustgraph` gives the ratios of Cassandra CPU and wall time (issue #28:
at most 1/3) and whether TrustGraph's reader (get_spo) found a sample of 200 quads in both keyspaces.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KINDS = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".html": "text/html",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".eml": "message/rfc822",
    ".txt": "text/plain",
}


def cassandra_pid() -> int:
    services = Path(os.environ.get("UD_SERVICES_DIR") or REPO / ".services")
    return int((services / "cassandra" / "cassandra.pid").read_text().split()[0])


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def decoded_quads(folder: Path) -> dict[str, list]:
    """Each document of folder decoded into a throwaway embedded librarian: {file name: its quads}."""
    from resources.settings import load_settings, open_librarian
    from ud_assets.decoding.model import DecoderConfig
    from ud_assets.processing.runner import process_document
    from ud_assets.processing.stages import NAMES as STAGES

    out: dict[str, list] = {}
    with (
        tempfile.TemporaryDirectory() as home,
        open_librarian(load_settings(backend="embedded", home=home, workspace="bench")) as lib,
    ):
        for path in sorted(folder.iterdir()):
            kind = KINDS.get(path.suffix.lower())
            if kind is None:
                continue
            before = set(lib.triples.query(collection=lib.collection))
            lib.add_document(path.name, kind, path.read_bytes(), title=path.name)
            process_document(lib, path.name, DecoderConfig(), STAGES)
            after = lib.triples.query(collection=lib.collection)
            out[path.name] = [q for q in after if q not in before]
    return out


def copies(quads: list, n: int) -> list:
    """n renamed copies of the quads (subjects, and IRI objects naming them, get a suffix per copy)."""
    from dataclasses import replace

    from resources.model import Term

    subjects = {q.s for q in quads}
    out = []
    for i in range(n):

        def rename(v: str, i: int = i) -> str:
            return f"{v}#copy{i}" if v in subjects else v

        for q in quads:
            o = q.o
            if o.is_iri and o.value in subjects:
                o = Term(rename(o.value), is_iri=True)
            out.append(replace(q, s=rename(q.s), o=o))
    return out


def count_rows(connection, keyspace: str) -> int:
    total = 0
    for table in ("quads_by_entity", "quads_by_collection"):
        total += int(connection.execute(f'SELECT COUNT(*) FROM "{keyspace}".{table}', (), "counting rows").one()[0])
    return total


def _entity_rows_before_30(self, collection, s, p, o, d, otype, dtype, lang):
    """The writer before issue #30: no object row for literals."""
    yield s, "S"
    yield p, "P"
    if otype in ("u", "t"):
        yield o, "O"
    if d != "":
        yield d, "G"


def round_(quads: list, pid: int, before_30: bool = False) -> dict:
    if before_30:
        from unittest import mock

        from resources.cassandra.triples import CassandraTripleStore

        with mock.patch.object(CassandraTripleStore, "_entity_rows", _entity_rows_before_30):
            return round_(quads, pid)

    from resources.cassandra.connection import CassandraConfig, acquire
    from resources.cassandra.triples import CassandraTripleStore

    connection = acquire(CassandraConfig.from_env())
    workspace = f"udbench_triples_{uuid.uuid4().hex[:10]}"
    try:
        store = CassandraTripleStore(connection, workspace)
        store.insert(quads[:1])  # the collection row, prepared statements (not measured)
        rest = quads[1:]
        time.sleep(1.0)
        cpu0, t0 = process_cpu_s(pid), time.monotonic()
        store.insert(rest)
        insert_s = time.monotonic() - t0
        time.sleep(1.0)  # what the server does right after acknowledging (hints, compaction checks)
        cpu = process_cpu_s(pid) - cpu0
        rows = count_rows(connection, store.keyspace)
        return {
            "quads": len(quads),
            "rows": rows,
            "rows_per_quad": rows / len(quads),
            "cassandra_cpu_s": cpu,
            "cassandra_cpu_ms_per_quad": 1000 * cpu / len(rest),
            "insert_s": insert_s,
        }
    finally:
        connection.ddl(f'DROP KEYSPACE IF EXISTS "{workspace}"', "dropping the bench keyspace")
        connection.release()


def trustgraph_round(quads: list, pid: int, readers: int = 200) -> dict:
    """The same quads written as TrustGraph 2.11.1's own triples writer writes them
    (storage/triples/cassandra/write.py: EntityCentricKnowledgeGraph.async_insert, one logged batch
    per quad, awaited one at a time), into a fresh keyspace of the same server; then its reader's
    get_spo finds a sample of them (`readers`), in this keyspace and in one the project wrote."""
    import asyncio
    import random

    from tests import trustgraph_code

    trustgraph_code.use()
    from trustgraph.direct.cassandra_kg import EntityCentricKnowledgeGraph

    from resources.cassandra.connection import CassandraConfig, acquire
    from resources.cassandra.triples import CassandraTripleStore, _parts

    hosts = [h.strip() for h in os.environ["CASSANDRA_HOST"].split(",") if h.strip()]
    workspace = f"udbench_tg_{uuid.uuid4().hex[:10]}"
    ours_workspace = f"udbench_triples_{uuid.uuid4().hex[:10]}"
    tg = EntityCentricKnowledgeGraph(hosts=hosts, keyspace=workspace)
    connection = acquire(CassandraConfig.from_env())
    try:

        def args(q):
            s, p, o, d, otype, dtype, lang = _parts(q)
            return s, p, o, d, otype, dtype, lang

        s, p, o, d, otype, dtype, lang = args(quads[0])
        tg.insert("default", s, p, o, g=d, otype=otype, dtype=dtype, lang=lang)  # prepared, warm (not measured)
        rest = quads[1:]

        async def write() -> None:
            for q in rest:
                s, p, o, d, otype, dtype, lang = args(q)
                await tg.async_insert("default", s, p, o, g=d, otype=otype, dtype=dtype, lang=lang)

        time.sleep(1.0)
        cpu0, t0 = process_cpu_s(pid), time.monotonic()
        asyncio.run(write())
        insert_s = time.monotonic() - t0
        time.sleep(1.0)
        cpu = process_cpu_s(pid) - cpu0
        rows = count_rows(connection, tg.keyspace)
        # TrustGraph's reader finds the quads whoever wrote them: in its own keyspace and in ours.
        CassandraTripleStore(connection, ours_workspace).insert(quads)
        ours = EntityCentricKnowledgeGraph(hosts=hosts, keyspace=ours_workspace)
        sample = random.Random(30).sample(quads, min(readers, len(quads)))
        found = {"trustgraph": 0, "ud": 0}
        for q in sample:
            s, p, o, d, *_ = args(q)
            found["trustgraph"] += bool(list(tg.get_spo("default", s, p, o, g=d)))
            found["ud"] += bool(list(ours.get_spo("default", s, p, o, g=d)))
        ours.cluster.shutdown()
        return {
            "quads": len(quads),
            "rows": rows,
            "rows_per_quad": rows / len(quads),
            "cassandra_cpu_s": cpu,
            "cassandra_cpu_ms_per_quad": 1000 * cpu / len(rest),
            "insert_s": insert_s,
            "reader_sample": len(sample),
            "reader_found": found,
        }
    finally:
        for keyspace in (tg.keyspace, ours_workspace):
            connection.ddl(f'DROP KEYSPACE IF EXISTS "{keyspace}"', "dropping the bench keyspace")
        connection.release()
        tg.cluster.shutdown()


def figures(rounds: list[dict]) -> dict:
    return {
        "quads": rounds[0]["quads"],
        "rows_per_quad": statistics.median(r["rows_per_quad"] for r in rounds),
        "cassandra_cpu_ms_per_quad": statistics.median(r["cassandra_cpu_ms_per_quad"] for r in rounds),
        "insert_s": statistics.median(r["insert_s"] for r in rounds),
    }


def per_document(per_doc: dict[str, list]) -> dict[str, dict]:
    """Rows each document's quads make, counted as the project's writer makes them (no server needed)."""
    from resources.cassandra.triples import CassandraTripleStore, _parts

    store = CassandraTripleStore.__new__(CassandraTripleStore)
    out = {}
    for name, quads in per_doc.items():
        rows = sum(1 for q in quads for _ in store._rows_of("default", *_parts(q), "c", "e"))
        out[name] = {"quads": len(quads), "rows": rows}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=Path, default=REPO / "samples")
    parser.add_argument("--copies", type=int, default=20, help="renamed copies of the decoded quads")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quads-cache", type=Path, help="a JSON file of the decoded quads (made when missing)")
    parser.add_argument("--before-30", action="store_true", help="also the layout before #30, alternated")
    parser.add_argument(
        "--trustgraph", action="store_true", help="also TrustGraph 2.11.1's own writer on the same quads, alternated"
    )
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args(argv)
    from unittest import mock

    from resources.cassandra.triples import CassandraTripleStore
    from resources.model import Quad, Term

    if args.quads_cache and args.quads_cache.exists():
        raw = json.loads(args.quads_cache.read_text())
        per_doc = {
            name: [
                Quad(s, p, Term(v, is_iri=i, datatype=dt, language=la, is_triple=t), g)
                for s, p, v, i, dt, la, t, g in qs
            ]
            for name, qs in raw.items()
        }
    else:
        per_doc = decoded_quads(args.documents)
        if args.quads_cache:
            args.quads_cache.write_text(
                json.dumps(
                    {
                        name: [
                            (q.s, q.p, q.o.value, q.o.is_iri, q.o.datatype, q.o.language, q.o.is_triple, q.g)
                            for q in qs
                        ]
                        for name, qs in per_doc.items()
                    }
                )
            )
    quads = copies([q for qs in per_doc.values() for q in qs], args.copies)
    pid = cassandra_pid()
    round_(quads[:500], pid)  # the server's code warm (JIT) before anything is measured
    rounds, old, theirs = [], [], []
    if args.trustgraph:
        trustgraph_round(quads[:500], pid, readers=10)  # their code path warm too
    for _ in range(args.repeat):
        if args.before_30:
            old.append(round_(quads, pid, before_30=True))
        if args.trustgraph:
            theirs.append(trustgraph_round(quads, pid))
        rounds.append(round_(quads, pid))
    result: dict = {"triples": figures(rounds), "per_document": per_document(per_doc), "rounds": rounds}
    if args.trustgraph:
        tg_figures = figures(theirs)
        result["trustgraph_writer"] = {**tg_figures, "rounds": theirs}
        result["ud_vs_trustgraph"] = {
            # Issue #28's target: at most 1/3 of TrustGraph's own writer's Cassandra CPU and wall time.
            "cassandra_cpu_ratio": result["triples"]["cassandra_cpu_ms_per_quad"]
            / tg_figures["cassandra_cpu_ms_per_quad"],
            "wall_ratio": result["triples"]["insert_s"] / tg_figures["insert_s"],
            "readers_found_every_sampled_quad": all(
                r["reader_found"]["trustgraph"] == r["reader_found"]["ud"] == r["reader_sample"] for r in theirs
            ),
        }
    if args.before_30:
        with mock.patch.object(CassandraTripleStore, "_entity_rows", _entity_rows_before_30):
            before = per_document(per_doc)
        result["before_30"] = {**figures(old), "per_document": before, "rounds": old}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
