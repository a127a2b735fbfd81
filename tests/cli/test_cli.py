"""The `ud decode` command on local files, in a fresh process as users run it."""

import json
import subprocess
import sys

import rdflib

from tests import docgen


def ud(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ud_assets.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
        timeout=300,
    )


def test_decode_prints_json_per_file_and_a_one_line_error_for_a_bad_one(tmp_path):
    (tmp_path / "notes.md").write_bytes(docgen.markdown())
    (tmp_path / "broken.pdf").write_bytes(docgen.pdf_truncated())
    (tmp_path / "cities.csv").write_bytes(docgen.csv_utf16())
    done = ud("decode", "notes.md", "broken.pdf", "cities.csv", "--section-strategy", "heading", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("ud decode: broken.pdf: ") and "Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert [d["document"]["id"] for d in out] == ["notes.md", "cities.csv"]
    notes = out[0]
    assert notes["document"]["mime_type"] == "text/markdown" and len(notes["sections"]) == 4
    for section in notes["sections"]:
        for element in section["elements"]:
            assert section["text"][element["offset"] : element["offset"] + element["length"]] == element["text"]


def test_decode_nquads_parse_as_rdf(tmp_path):
    (tmp_path / "report.pdf").write_bytes(docgen.pdf_with_text_and_image())
    done = ud("decode", "report.pdf", "--format", "nquads", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dataset = rdflib.Dataset()
    dataset.parse(data=done.stdout, format="nquads")
    graphs = {str(g) for _s, _p, _o, g in dataset.quads((None, None, None, None))}
    assert graphs == {"urn:graph:source"}
    images = list(dataset.quads((None, rdflib.RDF.type, rdflib.URIRef("https://trustgraph.ai/ns/Image"), None)))
    assert len(images) == 3


def test_invalid_options_are_refused(tmp_path):
    (tmp_path / "notes.md").write_bytes(docgen.markdown())
    done = ud("decode", "notes.md", "--section-element-count", "0", "--section-strategy", "count", cwd=tmp_path)
    assert done.returncode == 2 and "section_element_count must be > 0" in done.stderr
