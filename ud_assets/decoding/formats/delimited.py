"""CSV and TSV read tolerantly: what a person sees when a spreadsheet opens the file.

unstructured's partition_csv hands the file to pandas, which refuses a row with more fields than
the first ("Expected 2 fields in line 9, saw 3"); its delimiter is sniffed from the first line
alone with an unrestricted csv.Sniffer, so a one-column CSV gets a space or a letter of its first
cell as delimiter and cells written "None"; and it reads UTF-8 only. Here:

- the text comes decoded whatever its encoding (detect.decode_text: byte-order marks, UTF-16/32,
  legacy code pages), with any byte-order mark dropped;
- the delimiter of a CSV is the candidate (`CANDIDATES`) that splits the most of the first
  `SNIFF_LINES` records into the same number of fields (more than one), ties going to the earlier
  candidate; none: the file is one column. A TSV's is the tab;
- records are read with Python's csv module (pandas' quoting rules: `"` quotes a field, `""` is a
  literal quote), blank lines skipped, every cell kept as written;
- the table is as wide as its widest record: shorter records are padded with empty cells, and
  the extra cells of a longer one are kept in extra columns, never dropped.

The table is rendered by unstructured's own code (`dataframe_to_html`, `HtmlTable`), so a file
pandas reads gives exactly unstructured's element, text and HTML.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import TYPE_CHECKING

from .. import detect
from .. import limits as limits_module
from ..model import DecodeError
from .base import Format

if TYPE_CHECKING:
    from unstructured.documents.elements import Table

CANDIDATES = (",", ";", "\t", "|")
SNIFF_LINES = 50
FIELD_LIMIT = 10 * 1048576  # unstructured's CSV_FIELD_LIMIT: the longest cell


def sniff_delimiter(text: str) -> str | None:
    """The delimiter that splits the first records most consistently, or None (one column)."""
    best, best_score = None, 0
    for candidate in CANDIDATES:
        widths = [len(row) for row in _records(text, candidate, SNIFF_LINES)]
        if not widths:
            return None
        width, count = Counter(widths).most_common(1)[0]
        score = count if width > 1 else 0
        if score > best_score:
            best, best_score = candidate, score
    return best


def read_rows(text: str, delimiter: str | None, max_cells: int) -> list[list[str]]:
    """The records of `text`, padded to the widest; DecodeError past max_cells cells."""
    rows: list[list[str]] = []
    width = cells = 0
    for row in _records(text, delimiter):
        rows.append(row)
        width = max(width, len(row))
        cells += len(row)
        if max(cells, width * len(rows)) > max_cells:
            raise DecodeError(
                f"the table exceeds the maximum of {max_cells:,} cells (CSV_MAX_CELLS): "
                f"at least {len(rows):,} rows x {width:,} columns"
            )
    return [row + [""] * (width - len(row)) for row in rows]


def _records(text: str, delimiter: str | None, limit: int | None = None) -> list[list[str]]:
    """Non-blank records of `text` split on `delimiter` (None: one field per line)."""
    text = text.lstrip("\ufeff")
    # The unit separator never occurs in text: one field per line (quotes still group lines).
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter or "\x1f", strict=False)
    records: list[list[str]] = []
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # a blank line, which pandas skips
            records.append(row)
            if limit is not None and len(records) >= limit:
                break
    except csv.Error as exc:  # e.g. a NUL byte, or a field above the size limit
        raise DecodeError(f"the table could not be read: {exc}") from None
    return records


def partition_delimited(text: str, mime: str, metadata_filename: str) -> list[Table]:
    """One Table element for the whole file, as unstructured's partition_csv/partition_tsv make it."""
    import pandas as pd
    from unstructured.common.html_table import HtmlTable
    from unstructured.documents.elements import ElementMetadata, Table
    from unstructured.partition.csv import dataframe_to_html
    from unstructured.partition.utils.config import env_config

    csv.field_size_limit(FIELD_LIMIT)
    delimiter = "\t" if mime == detect.TSV else sniff_delimiter(text)
    rows = read_rows(text, delimiter, env_config.CSV_MAX_CELLS)
    if not rows:  # as pandas says it: there is no table to make
        raise DecodeError(f"{'TSV' if mime == detect.TSV else 'CSV'} has no columns: it holds only blank lines")
    dataframe = pd.DataFrame(rows, dtype=str)
    html_table = HtmlTable.from_html_text(dataframe_to_html(dataframe, header=False))
    metadata = ElementMetadata(filename=metadata_filename, text_as_html=html_table.html)
    table = Table(text=html_table.text, metadata=metadata, detection_origin="tsv" if mime == detect.TSV else "csv")
    table.id_to_hash(0)
    return [table]


FORMAT = Format(
    name="delimited",
    logic_version="1",
    mime_types=frozenset({detect.CSV, detect.TSV}),
    warm_imports={detect.CSV: ("csv",), detect.TSV: ("tsv", "csv")},
    partition_text=partition_delimited,
    check=lambda data, mime, limits: limits_module.check_text(data, mime),
)
